// The shared client pool: one client per connection-relevant options, released with its holders.
#include "rocketmq/client_pool.h"

#include <gtest/gtest.h>

namespace ferry::rocketmq {
namespace {

TEST(ClientPool, SameOptionsShareOneClientOthersDoNot) {
  ClientOptions a;
  a.namesrvAddrs = "127.0.0.1:1";  // never contacted: clients connect on first request
  const std::size_t before = sharedClientCount();
  auto c1 = sharedClient(a);
  ASSERT_TRUE(c1.isOk()) << c1.status().toString();
  ClientOptions sameButNamed = a;
  sameButNamed.instanceName = "ignored";
  auto c2 = sharedClient(sameButNamed);
  ASSERT_TRUE(c2.isOk());
  EXPECT_EQ(c1->get(), c2->get());
  ClientOptions other = a;
  other.requestTimeoutMs = a.requestTimeoutMs + 1;
  auto c3 = sharedClient(other);
  ASSERT_TRUE(c3.isOk());
  EXPECT_NE(c1->get(), c3->get());
  ClientOptions elsewhere = a;
  elsewhere.namesrvAddrs = "127.0.0.1:2";
  auto c4 = sharedClient(elsewhere);
  ASSERT_TRUE(c4.isOk());
  EXPECT_NE(c1->get(), c4->get());
  EXPECT_EQ(sharedClientCount(), before + 3);
  c3->reset();
  c4->reset();
  EXPECT_EQ(sharedClientCount(), before + 1);
  RocketmqClient* first = c1->get();
  c1->reset();
  EXPECT_EQ(sharedClientCount(), before + 1);  // c2 still holds it
  c2->reset();
  EXPECT_EQ(sharedClientCount(), before);
  auto again = sharedClient(a);
  ASSERT_TRUE(again.isOk());
  EXPECT_NE(again->get(), nullptr);
  (void)first;
}

TEST(ClientPool, NoNameServerIsAnError) {
  ClientOptions none;
  auto c = sharedClient(none);
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ferry::rocketmq
