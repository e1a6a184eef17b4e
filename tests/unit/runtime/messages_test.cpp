// The runtime's typed messages: each one survives a round trip, and each bad
// field is refused with the message's and the field's name.
#include "runtime/messages.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "net/wire.h"

namespace tarn::runtime::msg {
namespace {

template <typename M>
std::string Refusal(const Json& j) {
  auto r = M::FromJson(j);
  EXPECT_FALSE(r.ok()) << M::kName << " accepted " << j.dump();
  return r.ok() ? "" : r.status().message();
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every field of a good message is required and typed: leaving one out, or
// sending it with the wrong type, is refused by the field's name.
template <typename M>
void ExpectEveryFieldChecked(const Json& good, const std::set<std::string>& optional = {}) {
  ASSERT_TRUE(M::FromJson(good).ok()) << M::FromJson(good).status().message();
  for (const auto& [key, value] : good.items()) {
    const std::string field = std::string(M::kName) + ": field '" + key + "'";
    if (!optional.count(key)) {
      Json missing = good;
      missing.erase(key);
      EXPECT_TRUE(Has(Refusal<M>(missing), field + " is missing")) << key;
    }
    Json wrong = good;
    wrong[key] = value.is_string() ? Json(5) : Json("x");
    const std::string why = Refusal<M>(wrong);
    EXPECT_TRUE(Has(why, field + " must be")) << key << ": " << why;
  }
  EXPECT_TRUE(
      Has(Refusal<M>(Json::array({1, 2})), std::string(M::kName) + ": must be a JSON object"));
}

TEST(MessagesTest, RegisterAndHeartbeatRoundTripAndCheckEveryField) {
  Register reg{"worker", 2, 7, 4242, ""};
  auto back = Register::FromJson(reg.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->role, "worker");
  EXPECT_EQ(back->index, 2);
  EXPECT_EQ(back->node, 7);
  EXPECT_EQ(back->pid, 4242);
  ExpectEveryFieldChecked<Register>(reg.ToJson());
  Json bad_role = reg.ToJson();
  bad_role["role"] = "boss";
  EXPECT_TRUE(Has(Refusal<Register>(bad_role),
                  "kRegister: field 'role' must be one of ps, worker, serving, got \"boss\""));
  Json negative = reg.ToJson();
  negative["index"] = -1;
  EXPECT_TRUE(Has(Refusal<Register>(negative), "field 'index' must be an integer >= 0, got -1"));
  Json fractional = reg.ToJson();
  fractional["node"] = 1.5;
  EXPECT_TRUE(Has(Refusal<Register>(fractional), "field 'node' must be an integer >= 0, got 1.5"));
  Json too_big = reg.ToJson();
  too_big["node"] = int64_t{1} << 40;  // does not fit a node id
  EXPECT_TRUE(Has(Refusal<Register>(too_big), "field 'node' must be an integer"));

  RegisterReply reply{3, 500, 4};
  auto r = RegisterReply::FromJson(reply.ToJson());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->generation, 3);
  EXPECT_EQ(r->heartbeat_ms, 500);
  EXPECT_EQ(r->max_missed_heartbeats, 4);
  ExpectEveryFieldChecked<RegisterReply>(reply.ToJson());
  Json zero = reply.ToJson();
  zero["heartbeatMs"] = 0;  // a node would spin
  EXPECT_TRUE(Has(Refusal<RegisterReply>(zero), "field 'heartbeatMs' must be an integer >= 1"));

  Heartbeat beat{7, 1, 3, 120};
  auto b = Heartbeat::FromJson(beat.ToJson());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->position, 120);
  ExpectEveryFieldChecked<Heartbeat>(beat.ToJson());
  auto stop = HeartbeatReply::FromJson(HeartbeatReply{true}.ToJson());
  ASSERT_TRUE(stop.ok());
  EXPECT_TRUE(stop->stop);
  EXPECT_TRUE(Has(Refusal<HeartbeatReply>(Json{{"stop", 1}}),
                  "kHeartbeat reply: field 'stop' must be true or false, got 1"));
}

TEST(MessagesTest, ReportsAreTypedWholeAndRefuseBadFigures) {
  EpochDoneReport done;
  done.origin = {1, 0, 2, 1};
  done.sums.loss = 12.5;
  done.sums.weight = 40;
  done.sums.rows = 100;
  done.sums.shifu = {3.25, 100};
  done.seconds = 0.5;
  done.stale = 2;
  done.bytes = 4096;
  Report report = Report::Of(done);
  report.node = 3;
  report.seq = 4;
  const Json body = report.ToJson();
  auto r = Report::FromJson(body);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->kind, "epoch_done");
  EXPECT_EQ(r->node, 3);
  EXPECT_EQ(r->seq, 4);
  ASSERT_NE(r->origin(), nullptr);
  EXPECT_EQ(r->origin()->slot, 1);
  EXPECT_EQ(r->origin()->epoch, 2);
  EXPECT_EQ(r->origin()->term, 1);
  EXPECT_EQ(r->epoch_done.sums.loss, 12.5);
  EXPECT_EQ(r->epoch_done.sums.rows, 100);
  EXPECT_EQ(r->epoch_done.bytes, 4096u);
  EXPECT_EQ(r->ToJson(), body);
  // Every field is required and typed; the envelope's errors name kReport,
  // the body's errors the report's kind.
  for (const char* key : {"kind", "node", "seq"}) {
    Json missing = body;
    missing.erase(key);
    EXPECT_TRUE(Has(Refusal<Report>(missing), std::string("kReport: field '") + key + "'"));
  }
  for (const char* key : {"slot", "bag", "epoch", "term", "loss", "weight", "rows", "shifuError",
                          "shifuRows", "seconds", "stale", "bytes"}) {
    const std::string field = std::string("kReport epoch_done: field '") + key + "'";
    Json missing = body;
    missing.erase(key);
    EXPECT_TRUE(Has(Refusal<Report>(missing), field + " is missing")) << key;
    Json wrong = body;
    wrong[key] = "x";
    EXPECT_TRUE(Has(Refusal<Report>(wrong), field + " must be")) << key;
  }
  Json text_figure = body;
  text_figure["loss"] = "low";
  EXPECT_TRUE(Has(Refusal<Report>(text_figure),
                  "kReport epoch_done: field 'loss' must be a number, got \"low\""));
  Json negative = body;
  negative["weight"] = -1;
  EXPECT_TRUE(Has(Refusal<Report>(negative), "field 'weight' must be a number >= 0"));
  Json fractional = body;
  fractional["rows"] = 1.5;
  EXPECT_TRUE(Has(Refusal<Report>(fractional), "field 'rows' must be an integer >= 0, got 1.5"));
  // A diverged loss travels as null (JSON has no NaN) and is read back as NaN.
  Json diverged = body;
  diverged["loss"] = nullptr;
  auto nan = Report::FromJson(diverged);
  ASSERT_TRUE(nan.ok()) << nan.status().message();
  EXPECT_TRUE(std::isnan(nan->epoch_done.sums.loss));
  Json kind = body;
  kind["kind"] = "done";
  EXPECT_TRUE(Has(Refusal<Report>(kind),
                  "field 'kind' must be one of await, epoch_done, valid_done, got \"done\""));
  EXPECT_TRUE(Has(Refusal<Report>(Json::array({1, 2})), "kReport: must be a JSON object"));

  // valid_done: the histograms are bounded, of numbers >= 0, of one length.
  ValidDoneReport valid;
  valid.origin = {0, 0, 7, 1};
  valid.summary.loss = 3;
  valid.summary.weight = 6;
  valid.summary.positive = {0, 1, 2};
  valid.summary.negative = {2, 1, 0};
  Report v = Report::Of(valid);
  v.node = 3;
  const Json vbody = v.ToJson();
  auto vr = Report::FromJson(vbody);
  ASSERT_TRUE(vr.ok()) << vr.status().message();
  EXPECT_EQ(vr->valid_done.summary.positive, valid.summary.positive);
  EXPECT_EQ(vr->valid_done.summary.Auc(), valid.summary.Auc());
  Json bad_bin = vbody;
  bad_bin["pos"] = Json::array({1, "x"});
  EXPECT_TRUE(Has(Refusal<Report>(bad_bin), "field 'pos[1]' must be a number >= 0, got \"x\""));
  Json huge = vbody;
  huge["neg"] = Json(std::vector<int>(kMaxReportBins + 1, 0));
  EXPECT_TRUE(
      Has(Refusal<Report>(huge), "kReport valid_done: field 'neg' must be a list of at most"));
  Json uneven = vbody;
  uneven["neg"] = Json::array({1});
  EXPECT_TRUE(Has(Refusal<Report>(uneven), "fields 'pos' and 'neg' differ in length (3 and 1)"));
  // An epoch_done's figures do not make a valid_done.
  Json mixed = body;
  mixed["kind"] = "valid_done";
  EXPECT_TRUE(Has(Refusal<Report>(mixed), "kReport valid_done: field 'pos' is missing"));

  // An await needs no slot, and may say why the worker stopped.
  auto await = Report::FromJson(Json{{"kind", "await"}, {"node", 3}, {"seq", 0}, {"reason", "x"}});
  ASSERT_TRUE(await.ok()) << await.status().message();
  EXPECT_EQ(await->origin(), nullptr);
  EXPECT_EQ(await->reason, "x");
  EXPECT_EQ(Report::FromJson(Report::Await("why").ToJson())->reason, "why");
  EXPECT_TRUE(Has(Refusal<Report>(Json{{"kind", "await"}, {"node", 3}, {"seq", 0}, {"reason", 1}}),
                  "field 'reason' must be a string"));
}

TEST(MessagesTest, DirectivesRoundTripAndCheckTheirLists) {
  Directive d;
  d.action = "train";
  d.seq = 5;
  d.slot = 1;
  d.bag = 2;
  d.epoch = 3;
  d.term = 4;
  d.position = 17;
  d.ps = {"127.0.0.1:5000", "127.0.0.1:5001"};
  d.shards = {1, 3};
  d.job = Json{{"inputs", 3}};
  auto back = Directive::FromJson(d.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ToJson(), d.ToJson());
  EXPECT_EQ(back->ps, d.ps);
  EXPECT_EQ(back->shards, d.shards);
  EXPECT_EQ(back->position, 17);
  EXPECT_EQ(back->job, d.job);
  ExpectEveryFieldChecked<Directive>(d.ToJson(), {"job"});
  Json shards = d.ToJson();
  shards["shards"] = Json::array({0, -2});
  EXPECT_TRUE(Has(Refusal<Directive>(shards),
                  "kReport reply (directive): field 'shards[1]' must be an integer >= 0, got -2"));
  Json ps = d.ToJson();
  ps["ps"] = Json::array({"a", ""});
  EXPECT_TRUE(Has(Refusal<Directive>(ps), "field 'ps[1]' must be a non-empty string"));
  ps["ps"] = Json::array();
  EXPECT_TRUE(Has(Refusal<Directive>(ps), "field 'ps' must be a list of at least one address"));
  Json action = d.ToJson();
  action["action"] = "sleep";
  EXPECT_TRUE(Has(Refusal<Directive>(action), "field 'action' must be one of train, validate"));
  // finish carries only its sequence number.
  auto finish = Directive::FromJson(Json{{"action", "finish"}, {"seq", 9}});
  ASSERT_TRUE(finish.ok()) << finish.status().message();
  EXPECT_EQ(finish->seq, 9);
  EXPECT_EQ(finish->ToJson(), (Json{{"action", "finish"}, {"seq", 9}}));
}

TEST(MessagesTest, ParameterServerControlRoundTripsAndRangeChecks) {
  Configure c;
  c.term = 2;
  c.bag = 1;
  c.epoch = 4;
  c.begin = 10;
  c.end = 25;
  c.job = Json{{"inputs", 3}};
  c.init_seed = std::numeric_limits<uint64_t>::max() - 1;  // seeds use all 64 bits
  c.load = "/x/slice.bin";
  auto back = Configure::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ToJson(), c.ToJson());
  EXPECT_EQ(back->init_seed, c.init_seed);
  ExpectEveryFieldChecked<Configure>(c.ToJson());
  Json end = c.ToJson();
  end["end"] = "x";
  EXPECT_TRUE(Has(Refusal<Configure>(end),
                  "kConfigure: field 'end' must be an integer > begin, got \"x\""));
  end["end"] = 10;
  EXPECT_TRUE(Has(Refusal<Configure>(end), "field 'end' must be an integer > begin, got 10"));
  Json job = c.ToJson();
  job["job"] = Json::array();
  EXPECT_TRUE(Has(Refusal<Configure>(job), "field 'job' must be an object, got []"));

  StartEpoch s{3, 1, {0, 2}};
  auto sb = StartEpoch::FromJson(s.ToJson());
  ASSERT_TRUE(sb.ok());
  EXPECT_EQ(sb->slots, (std::vector<int>{0, 2}));
  ExpectEveryFieldChecked<StartEpoch>(s.ToJson());
  Json slots = s.ToJson();
  slots["slots"] = Json::array({0, "1"});
  EXPECT_TRUE(Has(Refusal<StartEpoch>(slots), "kStartEpoch: field 'slots[1]' must be an integer"));

  ExpectEveryFieldChecked<SlotDone>(SlotDone{3, 1}.ToJson());
  ExpectEveryFieldChecked<Reset>(Reset{4}.ToJson());
  ExpectEveryFieldChecked<Checkpoint>(Checkpoint{2, "/x/s.bin"}.ToJson());
  EXPECT_TRUE(Has(Refusal<Checkpoint>(Checkpoint{2, ""}.ToJson()),
                  "kCheckpoint: field 'path' must be a non-empty string"));
  auto crc = CheckpointReply::FromJson(CheckpointReply{0xDEADBEEF, 123}.ToJson());
  ASSERT_TRUE(crc.ok());
  EXPECT_EQ(crc->crc, 0xDEADBEEFu);
  EXPECT_EQ(crc->bytes, 123u);
  ExpectEveryFieldChecked<CheckpointReply>(CheckpointReply{1, 2}.ToJson());
  EXPECT_TRUE(Has(Refusal<CheckpointReply>(Json{{"crc", int64_t{1} << 33}, {"bytes", 2}}),
                  "kCheckpoint reply: field 'crc' must be an integer in [0, 4294967295]"));
  EXPECT_TRUE(Has(Refusal<CheckpointReply>(Json{{"crc", 1}, {"bytes", 0}}),
                  "kCheckpoint reply: field 'bytes'"));
  EXPECT_TRUE(GetParams::FromJson(GetParams{}.ToJson()).ok());
  EXPECT_TRUE(Has(Refusal<Shutdown>(Json("now")), "kShutdown: must be a JSON object"));
  // Parse names the message when the payload is not JSON at all.
  auto junk = Parse<Reset>("{\"term\": ");
  ASSERT_FALSE(junk.ok());
  EXPECT_TRUE(Has(junk.status().message(), "kReset: not valid JSON"));
  // Nesting deep enough to overflow a recursive printer is refused unprinted.
  const size_t depth = 200000;
  auto deep = Parse<Reset>("{\"term\":" + std::string(depth, '[') + std::string(depth, ']') + "}");
  ASSERT_FALSE(deep.ok());
  EXPECT_TRUE(Has(deep.status().message(), "kReset: nested deeper than 64 levels"));
  EXPECT_TRUE(Parse<Reset>("{\"term\": 3, \"note\": [[[1]]]}").ok());
  EXPECT_EQ(MessageName(kConfigure), "kConfigure");
  EXPECT_EQ(MessageName(99), "message type 99");
}

TEST(MessagesTest, PushesAreDecodedOnlyWhenWholeAndSizedForTheSlice) {
  const std::vector<float> grad = {0.5f, -1.0f, 2.0f};
  const std::string bytes = Push::Encode(3, 1, 7, 128.0, grad);
  Push p;
  ASSERT_TRUE(Push::Decode(bytes, grad.size(), &p).ok());
  EXPECT_EQ(p.term, 3);
  EXPECT_EQ(p.slot, 1);
  EXPECT_EQ(p.step, 7);
  EXPECT_EQ(p.weight, 128.0);
  EXPECT_EQ(p.gradient, grad);
  // Every truncation is an error naming the message, never an overread.
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    Status st = Push::Decode(std::string_view(bytes).substr(0, cut), grad.size(), &p);
    ASSERT_FALSE(st.ok()) << "cut at " << cut;
    EXPECT_TRUE(Has(st.message(), "kPush: ")) << st.message();
  }
  Status wrong = Push::Decode(bytes, 4, &p);
  EXPECT_TRUE(Has(wrong.message(), "kPush: gradient holds 3 values, the slice 4"))
      << wrong.message();
  Status longer = Push::Decode(bytes, 2, &p);
  EXPECT_TRUE(Has(longer.message(), "exceeds the limit of 2")) << longer.message();
  Status trailing = Push::Decode(bytes + "x", grad.size(), &p);
  EXPECT_TRUE(Has(trailing.message(), "kPush: 1 unexpected bytes at the end"));
  Status nan = Push::Decode(Push::Encode(3, 1, 7, NAN, grad), grad.size(), &p);
  EXPECT_TRUE(Has(nan.message(), "kPush: weight must be a finite number >= 0"));
  // A count far larger than the payload is refused before anything is allocated.
  net::WireWriter w;
  w.I64(3);
  w.U32(1);
  w.I64(7);
  w.F64(1.0);
  w.U32(0xFFFFFFFFu);
  Status huge = Push::Decode(w.Take(), size_t{1} << 40, &p);
  EXPECT_TRUE(Has(huge.message(), "overruns the payload")) << huge.message();
  net::WireWriter s;
  s.I64(3);
  s.U32(0x80000000u);  // a slot that does not fit
  s.I64(7);
  s.F64(1.0);
  s.Floats(grad);
  EXPECT_TRUE(Has(Push::Decode(s.Take(), grad.size(), &p).message(), "kPush: slot 2147483648"));
}

TEST(MessagesTest, PullsAndAnswersAreChecked) {
  auto pull = Pull::Decode(Pull::Encode(5));
  ASSERT_TRUE(pull.ok());
  EXPECT_EQ(pull->term, 5);
  EXPECT_TRUE(Has(Pull::Decode("abc").status().message(), "kPull: "));
  EXPECT_TRUE(Has(Pull::Decode(Pull::Encode(5) + "z").status().message(), "kPull: 1 unexpected"));

  const std::vector<float> params = {1, 2};
  ParamsAnswer a;
  ASSERT_TRUE(
      ParamsAnswer::Decode(ParamsAnswer::Encode(ParamsAnswer::kStale, 9, params), 2, &a).ok());
  EXPECT_EQ(a.status, ParamsAnswer::kStale);
  EXPECT_EQ(a.step, 9);
  EXPECT_EQ(a.params, params);
  EXPECT_TRUE(Has(ParamsAnswer::Decode(ParamsAnswer::Encode(7, 9, params), 2, &a).message(),
                  "status 7 is neither applied (0) nor stale (1)"));
  EXPECT_TRUE(Has(ParamsAnswer::Decode(ParamsAnswer::Encode(0, 9, params), 3, &a).message(),
                  "parameters holds 2 values, the slice 3"));
  auto all = Params::Decode(Params::Encode(params), 2);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, params);
  EXPECT_FALSE(Params::Decode(Params::Encode(params), 1).ok());
}

// The workers' epoch_done and valid_done reports.
TEST(MessagesTest, WorkerReportsRoundTripThroughJson) {
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

TEST(MessagesTest, WorkerReportsErrorsNameTheField) {
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
