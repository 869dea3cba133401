// TaskMetrics's connection (ferry/connector.h, ConnectionHealth): reports from the task win over
// what the runtime infers, a reconnect is reported once, three within a minute show as degraded,
// and TaskHost's heartbeat text reads back (and refuses what it did not write).
#include <gtest/gtest.h>

#include "control/task_host.h"
#include "runtime/tasks.h"

namespace ferry::runtime {
namespace {

using State = ConnectionHealth::State;

TEST(ConnectionHealth, NothingKnownUntilAReport) {
  TaskMetrics m;
  EXPECT_FALSE(m.connection(1000).has_value());
  EXPECT_FALSE(m.setConnection(ConnectionHealth{}, false, 1000));  // the first report is no reconnect
  auto c = m.connection(1000);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->state, State::kConnected);
  EXPECT_EQ(c->sinceMs, 1000);
  EXPECT_EQ(c->reconnects, 0u);
}

TEST(ConnectionHealth, LostAndBackCountsOneReconnectAndSaysWhenItCameBack) {
  TaskMetrics m;
  m.setConnection(ConnectionHealth{}, false, 1000);
  EXPECT_FALSE(m.setConnection({State::kReconnecting, "connection refused"}, false, 2000));
  EXPECT_FALSE(m.setConnection({State::kReconnecting, "connection refused"}, false, 2500));  // the same
  auto c = m.connection(3000);
  EXPECT_EQ(c->state, State::kReconnecting);
  EXPECT_EQ(c->reason, "connection refused");
  EXPECT_EQ(c->sinceMs, 2000);  // since the first failure, not the last
  EXPECT_EQ(c->reconnects, 1u);
  EXPECT_TRUE(m.setConnection(ConnectionHealth{}, false, 4000));  // back: true once
  EXPECT_FALSE(m.setConnection(ConnectionHealth{}, false, 4100));
  c = m.connection(4200);
  EXPECT_EQ(c->state, State::kConnected);
  EXPECT_EQ(c->reason, "");
  EXPECT_EQ(c->sinceMs, 4000);
}

TEST(ConnectionHealth, TheTasksOwnReportsWinOverInferredOnes) {
  TaskMetrics m;
  m.setConnection({State::kReconnecting, "broker down"}, true, 1000);
  // A poll that passed (records buffered before the loss) does not make it connected.
  EXPECT_FALSE(m.setConnection(ConnectionHealth{}, false, 1100));
  EXPECT_EQ(m.connection(1200)->state, State::kReconnecting);
  EXPECT_TRUE(m.setConnection(ConnectionHealth{}, true, 1300));
  EXPECT_EQ(m.connection(1400)->state, State::kConnected);
}

TEST(ConnectionHealth, ThreeLossesWithinAMinuteShowAsDegradedUntilTheMinutePassed) {
  TaskMetrics m;
  for (int i = 0; i < 3; ++i) {
    m.setConnection({State::kReconnecting, "malformed PUBLISH " + std::to_string(i)}, true, 1000 + i * 1000);
    m.setConnection(ConnectionHealth{}, true, 1500 + i * 1000);
  }
  auto c = m.connection(4000);
  EXPECT_EQ(c->state, State::kDegraded);
  EXPECT_NE(c->reason.find("3 times"), std::string::npos) << c->reason;
  EXPECT_NE(c->reason.find("malformed PUBLISH 2"), std::string::npos) << c->reason;
  EXPECT_EQ(c->reconnects, 3u);
  // Two losses are not enough; a minute later it is connected again.
  EXPECT_EQ(m.connection(1000 + 60000 + 1)->state, State::kConnected);
  TaskMetrics two;
  for (int i = 0; i < 2; ++i) {
    two.setConnection({State::kReconnecting, "x"}, true, 1000 + i * 1000);
    two.setConnection(ConnectionHealth{}, true, 1500 + i * 1000);
  }
  EXPECT_EQ(two.connection(4000)->state, State::kConnected);
}

TEST(ConnectionHealth, ATaskMayReportDegradedItself) {
  TaskMetrics m;
  m.setConnection({State::kDegraded, "no PINGRESP for 30 s"}, true, 1000);
  auto c = m.connection(2000);
  EXPECT_EQ(c->state, State::kDegraded);
  EXPECT_EQ(c->reason, "no PINGRESP for 30 s");
  EXPECT_EQ(c->reconnects, 0u);
}

TEST(ConnectionHealth, HeartbeatTextReadsBackAndRefusesOtherText) {
  control::ConnectionInfo c{"reconnecting", std::string(1000, 'x'), 1234, 7};
  const std::string text = control::TaskHost::connectionText(c);
  EXPECT_LT(text.size(), 400u);  // the reason is cut
  auto back = control::TaskHost::readConnectionText(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->state, "reconnecting");
  EXPECT_EQ(back->sinceMs, 1234);
  EXPECT_EQ(back->reconnects, 7u);
  EXPECT_EQ(back->reason.substr(0, 300), std::string(300, 'x'));
  for (const char* bad : {"", "[]", "{\"state\":\"up\",\"reason\":\"\",\"since\":1,\"reconnects\":0}",
                          "{\"state\":\"connected\",\"reason\":5,\"since\":1,\"reconnects\":0}",
                          "{\"state\":\"connected\",\"reason\":\"\",\"since\":1,\"reconnects\":-1}", "{\"state\":"})
    EXPECT_FALSE(control::TaskHost::readConnectionText(bad).has_value()) << bad;
}

}  // namespace
}  // namespace ferry::runtime
