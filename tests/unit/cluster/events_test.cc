// Cluster log events: every type round-trips; malformed records are refused, naming the field.
#include "cluster/events.h"

#include <gtest/gtest.h>

#include <limits>

namespace ferry::cluster {
namespace {

TEST(ClusterEvents, EveryTypeRoundTrips) {
  std::vector<Event> all;
  Event hb;
  hb.type = EventType::kHeartbeat;
  hb.worker = "w1";
  hb.incarnation = "i1";
  hb.url = "http://127.0.0.1:8083";
  hb.capacity = 2.5;
  hb.sentMs = 123456;
  hb.loads = {{"c-0", 0.5}};
  hb.progress = {{"c-0", R"({"phase":"initial load","done":5,"estimated":10,"unit":"rows","rate":2.5})"}};
  hb.counters = {{"c-0", {10, 9, 1, 2}}, {"c-1", {std::numeric_limits<std::int64_t>::max(), 0, 0, 0}}};
  all.push_back(hb);
  Event quiet = hb;  // no progress nor counters: the fields are left out, as workers of earlier versions send them
  quiet.progress.clear();
  quiet.counters.clear();
  all.push_back(quiet);
  Event leave;
  leave.type = EventType::kLeave;
  leave.worker = "w1";
  leave.incarnation = "i1";
  all.push_back(leave);
  Event put;
  put.type = EventType::kConnectorPut;
  put.connector = "c";
  put.config = {{"connector.class", "DatagenSource"}, {"tasks.max", "3"}};
  put.target = "PAUSED";
  all.push_back(put);
  Event del;
  del.type = EventType::kConnectorDelete;
  del.connector = "c";
  all.push_back(del);
  Event target;
  target.type = EventType::kTargetState;
  target.connector = "c";
  target.target = "STOPPED";
  all.push_back(target);
  Event tasks;
  tasks.type = EventType::kTaskConfigs;
  tasks.connector = "c";
  tasks.generation = 7;
  tasks.taskConfigs = {{{"a", "1"}}, {{"a", "2"}}};
  all.push_back(tasks);
  Event rel;
  rel.type = EventType::kReleased;
  rel.worker = "w2";
  rel.incarnation = "i2";
  rel.connector = "c";
  rel.task = 1;
  rel.epoch = 4;
  all.push_back(rel);
  Event restart;
  restart.type = EventType::kRestart;
  restart.connector = "c";
  restart.task = -1;
  all.push_back(restart);
  Event status;
  status.type = EventType::kStatus;
  status.worker = "w1";
  status.incarnation = "i1";
  status.connector = "c";
  status.task = 2;
  status.epoch = 3;
  status.state = "FAILED";
  status.trace = "boom\nat line 2";
  all.push_back(status);
  for (const auto& e : all) {
    auto back = decode(encode(e));
    ASSERT_TRUE(back.isOk()) << eventTypeName(e.type) << ": " << back.status().toString();
    EXPECT_EQ(encode(*back), encode(e)) << eventTypeName(e.type);
  }
  auto h = decode(encode(hb));
  EXPECT_EQ(h->capacity, 2.5);
  EXPECT_EQ(h->loads.at("c-0"), 0.5);
  EXPECT_EQ(h->progress.at("c-0"), hb.progress.at("c-0"));
  EXPECT_EQ(encode(quiet).find("progress"), std::string::npos);
  EXPECT_EQ(h->counters, hb.counters);
  EXPECT_EQ(encode(quiet).find("counters"), std::string::npos);
  EXPECT_TRUE(decode(encode(quiet))->counters.empty());
  auto t = decode(encode(tasks));
  ASSERT_EQ(t->taskConfigs.size(), 2u);
  EXPECT_EQ(t->taskConfigs[1].at("a"), "2");
  EXPECT_EQ(t->generation, 7);
}

TEST(ClusterEvents, MalformedRecordsAreRefusedNamingTheField) {
  struct Case {
    const char* bytes;
    const char* needle;
  };
  const Case cases[] = {
      {"", "not a JSON object"},
      {"[1,2]", "not a JSON object"},
      {R"({"worker":"w"})", "'type'"},
      {R"({"type":"gossip"})", "unknown cluster event type 'gossip'"},
      {R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":1,"loads":{}})", "'sentMs'"},
      {R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":"x","sentMs":1,"loads":{}})",
       "'capacity' has the wrong type"},
      {R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":1,"sentMs":1,"loads":{"a":"b"}})",
       "'loads.a'"},
      {R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":1,"sentMs":1,"loads":{},"progress":[]})",
       "'progress' has the wrong type"},
      {R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":1,"sentMs":1,"loads":{},"progress":{"c-0":{}}})",
       "'progress.c-0'"},
      {R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":1,"sentMs":1,"loads":{},"counters":[]})",
       "'counters' has the wrong type"},
      {R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":1,"sentMs":1,"loads":{},"counters":{"c-0":[1,2,3]}})",
       "'counters.c-0' is not four counts"},
      {R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":1,"sentMs":1,"loads":{},"counters":{"c-0":[1,2,3,-4]}})",
       "'counters.c-0'"},
      {R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":1,"sentMs":1,"loads":{},"counters":{"c-0":[1,2,3,4.5]}})",
       "'counters.c-0'"},
      {R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":1,"sentMs":1,"loads":{},"counters":{"c-0":"1,2,3,4"}})",
       "'counters.c-0'"},
      {R"({"type":"connector","connector":"c","config":{"a":1},"target":"STARTED"})", "'config.a'"},
      {R"({"type":"connector","connector":"c","config":{},"target":"RUNNING"})", "target 'RUNNING'"},
      {R"({"type":"task-configs","connector":"c","generation":1.5,"tasks":[]})", "'generation' has the wrong type"},
      {R"({"type":"task-configs","connector":"c","generation":1,"tasks":[1]})", "non-object"},
      {R"({"type":"released","worker":"w","incarnation":"i","connector":"c","task":0})", "'epoch'"},
  };
  // A progress text longer than any a worker writes.
  const std::string huge = R"({"type":"heartbeat","worker":"w","incarnation":"i","url":"u","capacity":1,"sentMs":1,)"
                           R"("loads":{},"progress":{"c-0":")" + std::string(2000, 'x') + "\"}}";
  auto tooLong = decode(huge);
  ASSERT_FALSE(tooLong.isOk());
  EXPECT_NE(tooLong.status().message().find("'progress.c-0' is not a short string"), std::string::npos);
  for (const auto& c : cases) {
    auto r = decode(c.bytes);
    ASSERT_FALSE(r.isOk()) << c.bytes;
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos)
        << c.bytes << " -> " << r.status().message();
  }
}

}  // namespace
}  // namespace ferry::cluster
