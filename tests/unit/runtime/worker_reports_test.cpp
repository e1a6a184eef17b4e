// The workers' epoch_done and valid_done reports (runtime/messages.h).
#include <gtest/gtest.h>

#include "runtime/messages.h"

namespace tarn::runtime::msg {
namespace {

TEST(WorkerReports, RoundTripThroughJson) {
  EpochDoneReport e;
  e.origin = {1, 2, 3, 4};
  e.sums.loss = 12.5;
  e.sums.weight = 40;
  e.sums.rows = 30;
  e.sums.shifu = {3.25, 30};
  e.seconds = 0.5;
  e.stale = 2;
  e.bytes = 1 << 20;
  auto back = EpochDoneReport::FromJson(data::Json::parse(e.ToJson().dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->origin.slot, 1);
  EXPECT_EQ(back->origin.term, 4);
  EXPECT_EQ(back->sums.loss, 12.5);
  EXPECT_EQ(back->sums.rows, 30);
  EXPECT_EQ(back->sums.shifu.sum, 3.25);
  EXPECT_EQ(back->bytes, uint64_t{1} << 20);

  ValidDoneReport v;
  v.origin = {0, 0, 7, 1};
  v.summary.loss = 3;
  v.summary.weight = 6;
  v.summary.positive = {0, 1, 2};
  v.summary.negative = {2, 1, 0};
  auto vb = ValidDoneReport::FromJson(data::Json::parse(v.ToJson().dump()));
  ASSERT_TRUE(vb.ok()) << vb.status().message();
  EXPECT_EQ(vb->summary.positive, v.summary.positive);
  EXPECT_EQ(vb->summary.Auc(), v.summary.Auc());
}

TEST(WorkerReports, ErrorsNameTheField) {
  EpochDoneReport e;
  e.origin.slot = 0;
  ASSERT_TRUE(EpochDoneReport::FromJson(e.ToJson()).ok());
  auto j = e.ToJson();
  j.erase("weight");
  auto bad = EpochDoneReport::FromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'weight'"), std::string::npos);
  ValidDoneReport v;
  v.origin.slot = 0;
  v.summary.positive = {1};
  v.summary.negative = {1};
  auto k = v.ToJson();
  k["neg"] = "none";
  auto vb = ValidDoneReport::FromJson(k);
  ASSERT_FALSE(vb.ok());
  EXPECT_NE(vb.status().message().find("'neg'"), std::string::npos);
  EXPECT_FALSE(ValidDoneReport::FromJson(e.ToJson()).ok());  // the wrong kind
  e.origin.slot = -1;                                        // a report is always about a slot
  EXPECT_NE(EpochDoneReport::FromJson(e.ToJson()).status().message().find("'slot'"),
            std::string::npos);
}

}  // namespace
}  // namespace tarn::runtime::msg
