// Embedding tables sharded by row over parameter servers, over real TCP
// connections on loopback: the servers run the parameter server's sparse
// share (SparseShard), the client is the one workers use.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <thread>

#include "common/files.h"
#include "model/embedding_table.h"
#include "net/wire.h"
#include "runtime/checkpoint.h"
#include "runtime/sparse_client.h"
#include "runtime/sparse_messages.h"
#include "runtime/sparse_server.h"
#include "runtime/transport.h"
#include "test_util.h"

namespace tarn::runtime {
namespace {

using tarn::testing::TempDir;

constexpr int64_t kTerm = 3;

model::TableSpec Spec(const std::string& name, uint64_t rows, model::SparseOptimizerKind kind) {
  model::TableSpec s;
  s.name = name;
  s.rows = rows;
  s.dim = 8;
  s.seed = 42;
  s.optimizer.kind = kind;
  s.optimizer.learning_rate = 0.01;
  return s;
}

// P parameter servers' sparse shares serving TCP on loopback, and a client.
class Servers {
 public:
  explicit Servers(int count) : transport_(MakeTcpTransport("sparse-test-secret", /*tls=*/false)) {
    shards_.resize(static_cast<size_t>(count));
    servers_.resize(static_cast<size_t>(count));
    connections_.resize(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) Start(i);
    std::vector<net::RpcClient*> raw;
    for (auto& c : connections_) raw.push_back(c.get());
    client_ = std::make_unique<SparseTableClient>(raw, kTerm);
  }
  ~Servers() {
    for (auto& s : servers_) {
      if (s) s->Stop();
    }
  }

  // (Re)starts server i with an empty share: a restarted process.
  void Start(int i) {
    const auto k = static_cast<size_t>(i);
    auto shard = std::make_shared<SparseShard>(i);
    std::string address;
    auto requests = std::make_shared<std::atomic<int>>(0);
    auto handled = std::make_shared<std::atomic<int>>(0);
    auto server = transport_->Serve(
        "127.0.0.1", {},
        [shard, requests, handled](const net::RpcServer::Request& r,
                                   std::shared_ptr<net::RpcServer::Responder> out) {
          ++*requests;
          shard->Handle(r, std::move(out));
          ++*handled;
        },
        &address);
    requests_.resize(shards_.size());
    requests_[k] = requests;
    handled_.resize(shards_.size());
    handled_[k] = handled;
    ASSERT_TRUE(server.ok()) << server.status().message();
    shards_[k] = shard;
    servers_[k] = *server;
    addresses_.resize(shards_.size());
    addresses_[k] = address;
    connections_[k] = Dial(i);
    if (client_) client_->set_server(i, connections_[k].get());
  }
  // Kills server i: its connections close and its rows are gone.
  void Kill(int i) {
    const auto k = static_cast<size_t>(i);
    servers_[k]->Stop();
    servers_[k].reset();
    shards_[k].reset();
  }

  // Another connection to server i (another worker).
  std::unique_ptr<net::RpcClient> Dial(int i) {
    auto c =
        transport_->Dial(addresses_[static_cast<size_t>(i)], {}, 2000, net::Deadline::InMs(10000));
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(*c) : nullptr;
  }

  SparseTableClient& client() { return *client_; }
  SparseShard& shard(int i) { return *shards_[static_cast<size_t>(i)]; }
  // Messages server i answered since it started.
  int requests(int i) const { return *requests_[static_cast<size_t>(i)]; }
  // Waits until every server's handler has returned from the `count`
  // messages sent after `sent` (a sum of requests()). requests() counts a
  // message before its handler runs, so a sync push it counts may not be
  // waiting on its step yet; once handled, it is.
  void AwaitHandled(int sent, int count) const {
    auto handled = [&] {
      int total = 0;
      for (const auto& h : handled_) total += h ? h->load() : 0;
      return total;
    };
    while (handled() < sent + count) std::this_thread::yield();
  }
  net::RpcClient& connection(int i) { return *connections_[static_cast<size_t>(i)]; }

 private:
  std::shared_ptr<Transport> transport_;
  std::vector<std::shared_ptr<SparseShard>> shards_;
  std::vector<std::shared_ptr<net::RpcServer>> servers_;
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<net::RpcClient>> connections_;
  std::vector<std::shared_ptr<std::atomic<int>>> requests_;
  std::vector<std::shared_ptr<std::atomic<int>>> handled_;  // handlers returned, per server
  std::unique_ptr<SparseTableClient> client_;
};

struct Batch {
  std::vector<uint64_t> ids;  // with repeats, as a batch's categorical column has them
  std::vector<float> grads;   // ids.size() x dim
  double weight = 0;
};

Batch RandomBatch(std::mt19937_64& rng, uint64_t rows, size_t count, size_t dim) {
  Batch b;
  std::uniform_int_distribution<uint64_t> id(0, rows - 1);
  std::normal_distribution<float> g(0, 1);
  for (size_t i = 0; i < count; ++i) b.ids.push_back(id(rng) % 300);  // a hot subset: repeats
  for (size_t i = 0; i < count * dim; ++i) b.grads.push_back(g(rng));
  b.weight = static_cast<double>(count);
  return b;
}

// What the servers must hold: one table in one process, the same updates.
void ApplyToReference(model::EmbeddingTable& table, const Batch& b, int epoch) {
  const SummedRows summed = SumRowsById(b.ids, b.grads, table.spec().dim);
  std::vector<float> mean = summed.rows;
  const float scale = static_cast<float>(1.0 / b.weight);
  for (float& g : mean) g *= scale;
  table.ApplyGradient(summed.ids, mean.data(), epoch);
}

std::vector<float> Gathered(model::EmbeddingTable& t, const std::vector<uint64_t>& ids) {
  std::vector<float> out(ids.size() * t.spec().dim);
  t.Gather(ids, out.data());
  return out;
}

std::vector<uint64_t> Range(uint64_t n) {
  std::vector<uint64_t> ids(n);
  for (uint64_t i = 0; i < n; ++i) ids[i] = i;
  return ids;
}

TEST(SparseTable, FourServersMatchASingleTableAndHoldAQuarterEach) {
  for (auto kind : {model::SparseOptimizerKind::kAdam, model::SparseOptimizerKind::kAdaGrad,
                    model::SparseOptimizerKind::kSgd}) {
    Servers ps(4);
    const auto spec = Spec("users", 1'000'000, kind);
    ASSERT_TRUE(ps.client().Declare(spec).ok());
    auto reference = model::EmbeddingTable::Create(spec).value();
    std::mt19937_64 rng(9);
    for (int step = 0; step < 20; ++step) {
      const Batch b = RandomBatch(rng, spec.rows, 64, spec.dim);
      auto pulled = ps.client().Pull("users", b.ids);
      ASSERT_TRUE(pulled.ok()) << pulled.status().message();
      EXPECT_EQ(pulled->values, Gathered(*reference, pulled->ids)) << "step " << step;
      ASSERT_TRUE(ps.client().Push("users", 0, step / 10, b.ids, b.grads, b.weight).ok());
      ApplyToReference(*reference, b, step / 10);
    }
    auto all = ps.client().Pull("users", Range(300));
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->values, Gathered(*reference, all->ids));
    // Each server holds its quarter of the rows touched, and counted every step.
    uint64_t total = 0;
    for (int i = 0; i < 4; ++i) {
      auto held = ps.client().HeldBy("users", i);
      ASSERT_TRUE(held.ok());
      EXPECT_EQ(held->rows, 75u) << "server " << i;  // rows 0-299, id % 4 == i
      EXPECT_EQ(held->steps, 20u);
      total += held->rows;
    }
    EXPECT_EQ(total, reference->rows_held());
  }
}

TEST(SparseTable, BytesPerBatchDependOnTheRowsTouchedNotTheTableSize) {
  Servers ps(4);
  const auto small = Spec("small", 10'000, model::SparseOptimizerKind::kAdam);
  const auto large = Spec("large", 10'000'000, model::SparseOptimizerKind::kAdam);
  ASSERT_TRUE(ps.client().Declare(small).ok());
  ASSERT_TRUE(ps.client().Declare(large).ok());
  std::mt19937_64 rng(1);
  const Batch b = RandomBatch(rng, small.rows, 256, small.dim);
  std::vector<uint64_t> spent;
  for (const auto* name : {"small", "large"}) {
    const uint64_t before = ps.client().bytes();
    ASSERT_TRUE(ps.client().Pull(name, b.ids).ok());
    ASSERT_TRUE(ps.client().Push(name, 0, 0, b.ids, b.grads, b.weight).ok());
    spent.push_back(ps.client().bytes() - before);
  }
  EXPECT_EQ(spent[0], spent[1]);
  // And they grow with the distinct rows: fewer distinct rows, fewer bytes.
  Batch few = b;
  for (auto& id : few.ids) id %= 10;
  const uint64_t before = ps.client().bytes();
  ASSERT_TRUE(ps.client().Pull("large", few.ids).ok());
  ASSERT_TRUE(ps.client().Push("large", 0, 0, few.ids, few.grads, few.weight).ok());
  EXPECT_LT(ps.client().bytes() - before, spent[1] / 4);
}

// A batch touching several tables (WDL on Adult has 13) costs one pull and
// one push per server, and updates each table as its own pushes would.
TEST(SparseTable, ABatchOfSeveralTablesIsOnePullAndOnePushPerServer) {
  Servers ps(2);
  const std::vector<std::string> names = {"a", "b", "c"};
  std::vector<std::unique_ptr<model::EmbeddingTable>> reference;
  for (const auto& name : names) {
    const auto spec = Spec(name, 1000, model::SparseOptimizerKind::kAdam);
    ASSERT_TRUE(ps.client().Declare(spec).ok());
    reference.push_back(model::EmbeddingTable::Create(spec).value());
  }
  std::mt19937_64 rng(5);
  for (int step = 0; step < 10; ++step) {
    std::vector<Batch> batches;
    for (size_t t = 0; t < names.size(); ++t) batches.push_back(RandomBatch(rng, 1000, 64, 8));
    std::vector<SparseTableClient::TableIds> pulls;
    std::vector<SparseTableClient::TableGrads> pushes;
    for (size_t t = 0; t < names.size(); ++t) {
      pulls.push_back({names[t], batches[t].ids});
      pushes.push_back({names[t], batches[t].ids, batches[t].grads});
    }
    const int before0 = ps.requests(0), before1 = ps.requests(1);
    auto pulled = ps.client().PullTables(pulls);
    ASSERT_TRUE(pulled.ok()) << pulled.status().message();
    ASSERT_EQ(pulled->size(), names.size());
    for (size_t t = 0; t < names.size(); ++t) {
      EXPECT_EQ((*pulled)[t].values, Gathered(*reference[t], (*pulled)[t].ids)) << names[t];
    }
    ASSERT_TRUE(ps.client().PushTables(0, 0, pushes, batches[0].weight).ok());
    EXPECT_EQ(ps.requests(0) - before0, 2);
    EXPECT_EQ(ps.requests(1) - before1, 2);
    for (size_t t = 0; t < names.size(); ++t) {
      Batch b = batches[t];
      b.weight = batches[0].weight;
      ApplyToReference(*reference[t], b, 0);
    }
  }
  for (size_t t = 0; t < names.size(); ++t) {
    auto all = ps.client().Pull(names[t], Range(1000));
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->values, Gathered(*reference[t], all->ids)) << names[t];
    EXPECT_EQ(ps.client().HeldBy(names[t], 1)->steps, 10u);
  }
  // A push with one bad table steps none of them; one naming a table twice is refused.
  const auto before = ps.client().Pull("a", Range(1000));
  auto push = [&](const std::vector<std::pair<std::string, uint64_t>>& rows) {
    net::WireWriter w;
    w.I64(kTerm);
    w.U32(0);
    w.U32(0);
    w.F64(1.0);
    w.U8(0);
    w.U32(static_cast<uint32_t>(rows.size()));
    for (const auto& [table, id] : rows) {
      w.Str(table);
      EncodeIds(std::vector<uint64_t>{id}, &w);
      w.Floats(std::vector<float>(8, 1.0f));
    }
    auto reply = ps.connection(0).Call(kSparsePush, w.Take(), net::Deadline::InMs(10000));
    return reply.ok() ? std::string() : reply.status().message();
  };
  EXPECT_NE(push({{"a", 0}, {"b", 5000}}).find("outside"), std::string::npos);
  EXPECT_NE(push({{"a", 0}, {"b", 1}}).find("belongs to server 1"), std::string::npos);
  EXPECT_NE(push({{"a", 0}, {"a", 2}}).find("names table a twice"), std::string::npos);
  EXPECT_NE(push({{"a", 0}, {"nope", 2}}).find("no embedding table nope"), std::string::npos);
  EXPECT_EQ(ps.client().Pull("a", Range(1000))->values, before->values);
  EXPECT_EQ(ps.client().HeldBy("a", 0)->steps, 10u);
  EXPECT_EQ(ps.client().HeldBy("b", 0)->steps, 10u);
  // The client refuses a row outside a table before it sends anything.
  const int sent = ps.requests(0) + ps.requests(1);
  const std::vector<uint64_t> outside = {5000};
  const std::vector<float> grad(8, 1.0f);
  const std::vector<SparseTableClient::TableGrads> bad = {{"b", outside, grad}};
  const Status refused = ps.client().PushTables(0, 0, bad, 1.0);
  EXPECT_NE(refused.message().find("row 5000 of table b"), std::string::npos) << refused.message();
  EXPECT_EQ(ps.requests(0) + ps.requests(1), sent);
}

TEST(SparseTable, BadMessagesAreAnsweredWithAnErrorAndChangeNothing) {
  Servers ps(2);
  const auto spec = Spec("items", 100, model::SparseOptimizerKind::kAdam);
  ASSERT_TRUE(ps.client().Declare(spec).ok());
  auto call = [&](uint16_t type, const std::string& payload) {
    return ps.connection(0).Call(type, payload, net::Deadline::InMs(10000));
  };
  auto pull = [&](int64_t term, const std::string& table, const std::vector<uint64_t>& ids) {
    net::WireWriter w;
    w.I64(term);
    w.U32(1);
    w.Str(table);
    EncodeIds(ids, &w);
    return call(kSparsePull, w.Take());
  };
  auto message = [](const Result<std::string>& r) { return r.ok() ? "" : r.status().message(); };
  EXPECT_NE(message(pull(kTerm, "items", {200})).find("outside"), std::string::npos);
  EXPECT_NE(message(pull(kTerm, "items", {1})).find("belongs to server 1"), std::string::npos);
  EXPECT_NE(message(pull(kTerm, "nope", {0})).find("no embedding table nope"), std::string::npos);
  EXPECT_NE(message(pull(kTerm - 1, "items", {0})).find("stale term"), std::string::npos);
  {  // a count larger than the message
    net::WireWriter w;
    w.I64(kTerm);
    w.U32(1);
    w.Str("items");
    w.U32(1'000'000);
    w.U64(0);
    EXPECT_NE(message(call(kSparsePull, w.Take())).find("claims 1000000 row ids"),
              std::string::npos);
  }
  {  // a table count larger than the message
    net::WireWriter w;
    w.I64(kTerm);
    w.U32(1'000'000);
    w.Str("items");
    EXPECT_NE(message(call(kSparsePull, w.Take())).find("claims 1000000 tables"),
              std::string::npos);
  }
  auto push = [&](const std::vector<uint64_t>& ids, size_t values, double weight) {
    net::WireWriter w;
    w.I64(kTerm);
    w.U32(0);
    w.U32(0);
    w.F64(weight);
    w.U8(0);
    w.U32(1);
    w.Str("items");
    EncodeIds(ids, &w);
    w.Floats(std::vector<float>(values, 1.0f));
    return call(kSparsePush, w.Take());
  };
  EXPECT_NE(message(push({0, 0}, 16, 1)).find("appears twice"), std::string::npos);
  EXPECT_NE(message(push({0}, 7, 1)).find("7 gradient values for 1 rows"), std::string::npos);
  EXPECT_NE(message(push({0}, 8, -1)).find("weight"), std::string::npos);
  EXPECT_FALSE(call(kSparsePush, "short").ok());
  // None of them moved a row or counted a step.
  auto held = ps.client().HeldBy("items", 0);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->steps, 0u);
  auto row = ps.client().Pull("items", std::vector<uint64_t>{0});
  ASSERT_TRUE(row.ok());
  std::vector<float> initial(spec.dim);
  model::InitialRow(spec, 0, initial.data());
  EXPECT_EQ(row->values, initial);
}

TEST(SparseTable, ARestartedServerReloadsItsRowsFromTheCheckpoint) {
  TempDir dir;
  Servers ps(4);
  const auto spec = Spec("ads", 5'000'000, model::SparseOptimizerKind::kAdam);
  ASSERT_TRUE(ps.client().Declare(spec).ok());
  auto reference = model::EmbeddingTable::Create(spec).value();
  std::mt19937_64 rng(4);
  auto train = [&](int steps) {
    for (int s = 0; s < steps; ++s) {
      const Batch b = RandomBatch(rng, spec.rows, 128, spec.dim);
      ASSERT_TRUE(ps.client().Push("ads", 0, 0, b.ids, b.grads, b.weight).ok());
      ApplyToReference(*reference, b, 0);
    }
  };
  train(10);
  auto shares = ps.client().Checkpoint("ads", dir.path(), 0, 1);
  ASSERT_TRUE(shares.ok()) << shares.status().message();
  Manifest m;
  m.epoch = 1;
  m.slices.push_back({dir.File("dense-slice"), 0, 0, 0});  // a dense slice, as every job has
  auto dense_crc = WriteSlice(m.slices[0].path, Slice{});
  ASSERT_TRUE(dense_crc.ok()) << dense_crc.status().message();
  m.slices[0].crc = *dense_crc;
  for (const auto& s : *shares) m.tables.push_back({"ads", s.ps, s.path, s.crc});
  ASSERT_TRUE(WriteManifest(dir.path(), m).ok());
  const auto before = ps.client().Pull("ads", Range(300));
  ASSERT_TRUE(before.ok());

  ps.Kill(2);
  ps.Start(2);
  auto newest = NewestManifest(dir.path());
  ASSERT_TRUE(newest.ok()) << newest.status().message();
  ASSERT_EQ(newest->tables.size(), 4u);
  std::vector<std::string> load(4);
  for (const auto& t : newest->tables) load[static_cast<size_t>(t.ps)] = t.path;
  ASSERT_TRUE(ps.client().Declare(spec, load).ok());

  // It holds only the rows of its file, counts the same steps, and answers
  // the same rows.
  auto held = ps.client().HeldBy("ads", 2);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->rows, (*shares)[2].rows);
  EXPECT_GT(held->rows, 60u);
  EXPECT_EQ(held->steps, 10u);
  const auto after = ps.client().Pull("ads", Range(300));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->values, before->values);
  // Training goes on from there exactly as if nothing had happened.
  train(5);
  const auto resumed = ps.client().Pull("ads", Range(300));
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(resumed->values, Gathered(*reference, resumed->ids));

  // A share refuses another server's file.
  std::vector<std::string> swapped = load;
  std::swap(swapped[0], swapped[1]);
  auto refused = ps.client().Declare(spec, swapped);
  EXPECT_FALSE(refused.ok());
  // A corrupted share is refused by the manifest check.
  std::string bytes = *ReadWhole(load[3]);
  bytes[bytes.size() / 2] ^= 1;
  ASSERT_TRUE(WriteWhole(load[3], bytes).ok());
  EXPECT_FALSE(NewestManifest(dir.path()).ok());
  EXPECT_FALSE(ReadTableShare(load[3]).ok());
}

// The manifest lists table shares; a resume skips a manifest whose share is
// missing, and a dense-only manifest has no "tables" at all.
TEST(SparseTable, ManifestListsTableSharesAndAResumeSkipsOneWithAMissingShare) {
  TempDir dir;
  auto share =
      model::EmbeddingTable::Create(Spec("t", 10, model::SparseOptimizerKind::kSgd), 0, 1).value();
  const std::vector<uint64_t> ids = {3};
  std::vector<float> row(8);
  share->Gather(ids, row.data());
  auto write_epoch = [&](int epoch, bool with_share) {
    Manifest m;
    m.epoch = epoch;
    const std::string slice = dir.File(SliceName(0, epoch, 0));
    Slice s;
    s.end = 1;
    s.params = {1.0f};
    m.slices.push_back({slice, WriteSlice(slice, s).value(), 0, 1});
    const std::string path = dir.File(TableShareName(0, epoch, "t", 0));
    auto writer = TableShareWriter::Open(path, *share, 0, epoch, share->steps()).value();
    share->ForEachHeld([&](uint64_t id, const float* row) { writer->Add(id, row); });
    uint64_t bytes = 0;
    m.tables.push_back({"t", 0, path, writer->Finish(&bytes).value()});
    if (!with_share) std::filesystem::remove(path);
    EXPECT_TRUE(WriteManifest(dir.path(), m).ok());
  };
  write_epoch(1, true);
  write_epoch(2, false);
  auto newest = NewestManifest(dir.path());
  ASSERT_TRUE(newest.ok()) << newest.status().message();
  EXPECT_EQ(newest->epoch, 1);
  ASSERT_EQ(newest->tables.size(), 1u);
  auto read = ReadTableShare(newest->tables[0].path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->ids, ids);
  EXPECT_EQ(read->rows, row);
  Manifest dense;
  dense.epoch = 3;
  dense.slices = newest->slices;
  ASSERT_TRUE(WriteManifest(dir.path(), dense).ok());
  EXPECT_EQ(ReadWhole(dir.File(ManifestName(0, 3))).value().find("tables"), std::string::npos);
  EXPECT_TRUE(NewestManifest(dir.path()).value().tables.empty());
}

// The checkpoint copies rows a chunk per lock hold while pushes go on; the
// longest hold is reported (measured, not asserted).
TEST(SparseTable, CheckpointWhilePushesGoOn) {
  TempDir dir;
  Servers ps(4);
  const auto spec = Spec("big", 100'000'000, model::SparseOptimizerKind::kAdam);
  ASSERT_TRUE(ps.client().Declare(spec).ok());
  std::vector<uint64_t> ids(200'000);
  std::mt19937_64 rng(2);
  for (auto& id : ids) id = rng() % spec.rows;
  ASSERT_TRUE(ps.client().Pull("big", ids).ok());  // 200k rows touched, 50k per server
  std::atomic<bool> stop{false};
  std::atomic<int> pushes{0};
  // Each server's memory is its quarter of the rows touched.
  for (int i = 0; i < 4; ++i) {
    auto held = ps.client().HeldBy("big", i);
    ASSERT_TRUE(held.ok());
    EXPECT_GT(held->rows, 45'000u);
    EXPECT_LT(held->rows, 55'000u);
    // Values, m, v, and under 40 bytes for the row's id and its index slots.
    const uint64_t row_bytes = (spec.dim * 3) * sizeof(float) + 40;
    EXPECT_LT(held->bytes, (held->rows + 1024) * row_bytes);
    std::printf("server %d holds %llu rows, %llu bytes\n", i,
                static_cast<unsigned long long>(held->rows),
                static_cast<unsigned long long>(held->bytes));
  }
  // A second worker pushes on its own connections while the checkpoint runs.
  std::vector<std::unique_ptr<net::RpcClient>> own;
  for (int i = 0; i < 4; ++i) own.push_back(ps.Dial(i));
  std::thread pusher([&] {
    SparseTableClient worker({own[0].get(), own[1].get(), own[2].get(), own[3].get()}, kTerm);
    worker.AddTable(spec);
    std::mt19937_64 r(8);
    while (!stop) {
      Batch b = RandomBatch(r, spec.rows, 64, spec.dim);
      for (auto& id : b.ids) id = ids[id];
      if (!worker.Push("big", 1, 0, b.ids, b.grads, b.weight).ok()) break;
      ++pushes;
    }
  });
  auto shares = ps.client().Checkpoint("big", dir.path(), 0, 1);
  stop = true;
  pusher.join();
  ASSERT_TRUE(shares.ok()) << shares.status().message();
  double longest = 0, mean = 0;
  uint64_t rows = 0;
  for (const auto& s : *shares) {
    longest = std::max(longest, s.longest_pause_ms);
    mean += s.mean_pause_ms / static_cast<double>(shares->size());
    rows += s.rows;
    auto share = ReadTableShare(s.path);
    ASSERT_TRUE(share.ok()) << share.status().message();
    EXPECT_EQ(share->ids.size(), s.rows);
    for (uint64_t id : share->ids) ASSERT_EQ(id % 4, static_cast<uint64_t>(s.ps));
  }
  EXPECT_GE(rows, 190'000u);  // ~200k distinct ids of 1e8
  RecordProperty("longest_pause_ms", std::to_string(longest));
  std::printf(
      "checkpoint of %llu rows (dim %u, Adam) during %d pushes: longest pause %.3f ms, mean %.3f "
      "ms\n",
      static_cast<unsigned long long>(rows), spec.dim, pushes.load(), longest, mean);
}

// Sync mode: a table step waits for every slot training and applies one
// optimizer step of the slots' summed rows over their total weight, as the
// dense step averages the workers' gradients. Exactly: one step of a table
// with the gradient rows of both batches summed per row (worker 0's, then
// worker 1's), whichever push arrives first.
TEST(SparseTable, SyncStepAveragesTheSlotsPushesPerRowInSlotOrder) {
  Servers ps(2);
  const auto spec = Spec("users", 100'000, model::SparseOptimizerKind::kAdam);
  ASSERT_TRUE(ps.client().Declare(spec).ok());
  auto c0 = ps.Dial(0), c1 = ps.Dial(1);
  SparseTableClient second({c0.get(), c1.get()}, kTerm);  // slot 1's worker
  second.AddTable(spec);
  // Looks at the shares while a worker's push waits (a client makes one call at a time).
  auto o0 = ps.Dial(0), o1 = ps.Dial(1);
  SparseTableClient observer({o0.get(), o1.get()}, kTerm);
  observer.AddTable(spec);
  for (int i = 0; i < 2; ++i) {
    ps.shard(i).SetConsistency(Consistency::kSync);
    ps.shard(i).StartEpoch({0, 1});
  }
  auto reference = model::EmbeddingTable::Create(spec).value();
  std::mt19937_64 rng(11);
  for (int step = 0; step < 8; ++step) {
    const Batch b0 = RandomBatch(rng, spec.rows, 64, spec.dim);
    Batch b1 = RandomBatch(rng, spec.rows, 32, spec.dim);
    b1.weight = 20;
    // The first push waits for the other slot's; the arrival order alternates.
    SparseTableClient& first = step % 2 == 0 ? ps.client() : second;
    SparseTableClient& then = step % 2 == 0 ? second : ps.client();
    const Batch& first_batch = step % 2 == 0 ? b0 : b1;
    const Batch& then_batch = step % 2 == 0 ? b1 : b0;
    const int first_slot = step % 2, then_slot = 1 - step % 2;
    const int before = ps.requests(0) + ps.requests(1);
    Status first_status = Internal("not answered");
    std::thread t([&] {
      first_status = first.Push("users", first_slot, 0, first_batch.ids, first_batch.grads,
                                first_batch.weight);
    });
    ps.AwaitHandled(before, 2);  // both servers hold the push waiting on its step
    for (int i = 0; i < 2; ++i) EXPECT_EQ(observer.HeldBy("users", i)->steps, uint64_t(step));
    ASSERT_TRUE(
        then.Push("users", then_slot, 0, then_batch.ids, then_batch.grads, then_batch.weight).ok());
    t.join();
    ASSERT_TRUE(first_status.ok()) << first_status.message();
    // The reference: slot 0's rows, then slot 1's, summed per row; one step.
    const SummedRows s0 = SumRowsById(b0.ids, b0.grads, spec.dim);
    const SummedRows s1 = SumRowsById(b1.ids, b1.grads, spec.dim);
    std::vector<uint64_t> ids = s0.ids;
    ids.insert(ids.end(), s1.ids.begin(), s1.ids.end());
    std::vector<float> grads = s0.rows;
    grads.insert(grads.end(), s1.rows.begin(), s1.rows.end());
    Batch both{ids, grads, b0.weight + b1.weight};
    ApplyToReference(*reference, both, 0);
  }
  auto all = ps.client().Pull("users", Range(300));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->values, Gathered(*reference, all->ids));
  for (int i = 0; i < 2; ++i) EXPECT_EQ(observer.HeldBy("users", i)->steps, 8u);

  // A slot's last push of the epoch leaves the quorum: the other slot's
  // later batches are stepped alone, at once.
  const Batch b = RandomBatch(rng, spec.rows, 16, spec.dim);
  Status last = Internal("not answered");
  const std::vector<SparseTableClient::TableGrads> rows_of_b = {{"users", b.ids, b.grads}};
  std::thread t([&] { last = second.PushTables(1, 0, rows_of_b, b.weight, true); });
  ASSERT_TRUE(ps.client().Push("users", 0, 0, b.ids, b.grads, b.weight).ok());
  t.join();
  ASSERT_TRUE(last.ok()) << last.message();
  ASSERT_TRUE(ps.client().Push("users", 0, 0, b.ids, b.grads, b.weight).ok());
  EXPECT_EQ(observer.HeldBy("users", 0)->steps, 10u);

  // A slot done (kSlotDone, or dropped) closes the step that waited for it.
  for (int i = 0; i < 2; ++i) ps.shard(i).StartEpoch({0, 1});
  Status waited = Internal("not answered");
  const int before = ps.requests(0) + ps.requests(1);
  std::thread w([&] { waited = ps.client().Push("users", 0, 1, b.ids, b.grads, b.weight); });
  ps.AwaitHandled(before, 2);
  for (int i = 0; i < 2; ++i) ps.shard(i).SlotDone(1);
  w.join();
  ASSERT_TRUE(waited.ok()) << waited.message();
  EXPECT_EQ(observer.HeldBy("users", 1)->steps, 11u);

  // A roll back fails a waiting push and steps nothing.
  for (int i = 0; i < 2; ++i) ps.shard(i).StartEpoch({0, 1});
  const auto rows = ps.client().Pull("users", Range(300));
  Status failed = Status::Ok();
  const int sent = ps.requests(0) + ps.requests(1);
  std::thread f([&] { failed = ps.client().Push("users", 0, 1, b.ids, b.grads, b.weight); });
  ps.AwaitHandled(sent, 2);  // a roll back after the push waits, not before
  for (int i = 0; i < 2; ++i) ps.shard(i).FailWaiting("the job rolled back");
  f.join();
  EXPECT_NE(failed.message().find("the job rolled back"), std::string::npos) << failed.message();
  EXPECT_EQ(ps.client().Pull("users", Range(300))->values, rows->values);
  EXPECT_EQ(observer.HeldBy("users", 0)->steps, 11u);

  // Async: every push is its own step, on arrival.
  for (int i = 0; i < 2; ++i) ps.shard(i).SetConsistency(Consistency::kAsync);
  ASSERT_TRUE(ps.client().Push("users", 0, 1, b.ids, b.grads, b.weight).ok());
  ASSERT_TRUE(second.Push("users", 1, 1, b.ids, b.grads, b.weight).ok());
  EXPECT_EQ(observer.HeldBy("users", 0)->steps, 13u);
}

// A roll back re-declares every table from its checkpoint under a new term.
// Each server streams its file (a chunk at a time, crossing chunk edges
// here) after dropping the old share, so it never holds two; a share whose
// file fails its checksum is not installed: workers get an error, never the
// old rows or half a file.
TEST(SparseTable, ARollBackStreamsTheCheckpointAndNeverServesWrongRows) {
  TempDir dir;
  Servers ps(2);
  const auto spec = Spec("ids", 1'000'000, model::SparseOptimizerKind::kAdaGrad);
  ASSERT_TRUE(ps.client().Declare(spec).ok());
  std::mt19937_64 rng(8);
  auto train = [&](int steps) {
    for (int s = 0; s < steps; ++s) {
      Batch b = RandomBatch(rng, spec.rows, 256, spec.dim);
      for (size_t i = 0; i < b.ids.size(); ++i) b.ids[i] = (b.ids[i] * 7919 + s * 131) % 10'000;
      ASSERT_TRUE(ps.client().Push("ids", 0, 0, b.ids, b.grads, b.weight).ok());
    }
  };
  ASSERT_TRUE(ps.client().Pull("ids", Range(10'000)).ok());  // 5,000 rows a server
  train(5);
  auto shares = ps.client().Checkpoint("ids", dir.path(), 0, 1);
  ASSERT_TRUE(shares.ok()) << shares.status().message();
  const auto at_checkpoint = ps.client().Pull("ids", Range(10'000));
  ASSERT_TRUE(at_checkpoint.ok());
  std::vector<std::string> load;
  for (const auto& share : *shares) {
    EXPECT_EQ(share.rows, 5'000u);
    EXPECT_EQ(*FileCrc(share.path), share.crc);  // the CRC computed on the way is the file's
    auto read = ReadTableShare(share.path);
    ASSERT_TRUE(read.ok()) << read.status().message();
    EXPECT_EQ(read->ids.size(), 5'000u);
    load.push_back(share.path);
  }
  train(3);  // the rows move on past the checkpoint

  // Server 1's file is damaged in its rows: the roll back fails there.
  const std::string good = *ReadWhole(load[1]);
  std::string bad = good;
  bad[bad.size() / 2] ^= 1;
  ASSERT_TRUE(WriteWhole(load[1], bad).ok());
  ps.client().set_term(kTerm + 1);
  const Status failed = ps.client().Declare(spec, load);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("checksum mismatch"), std::string::npos) << failed.message();
  auto pulled = ps.client().Pull("ids", Range(10));
  ASSERT_FALSE(pulled.ok());  // server 1 holds no table: an error, not the old rows
  EXPECT_NE(pulled.status().message().find("no embedding table ids"), std::string::npos)
      << pulled.status().message();
  // A worker still on the old term is told so.
  auto c0 = ps.Dial(0), c1 = ps.Dial(1);
  SparseTableClient old({c0.get(), c1.get()}, kTerm);
  old.AddTable(spec);
  auto stale = old.Pull("ids", Range(10));
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.status().message().find("stale term"), std::string::npos);

  // With the file mended, the roll back gives the checkpoint's rows exactly.
  ASSERT_TRUE(WriteWhole(load[1], good).ok());
  ASSERT_TRUE(ps.client().Declare(spec, load).ok());
  const auto restored = ps.client().Pull("ids", Range(10'000));
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(restored->values, at_checkpoint->values);
  for (int i = 0; i < 2; ++i) {
    auto held = ps.client().HeldBy("ids", i);
    ASSERT_TRUE(held.ok());
    EXPECT_EQ(held->rows, 5'000u);
    EXPECT_EQ(held->steps, 5u);
  }
}

// The reader streams a share in chunks, checks the checksum at the end, and
// refuses a truncated file when it opens it.
TEST(SparseTable, TableShareReaderReadsInChunksAndChecksAtTheEnd) {
  TempDir dir;
  const auto spec = Spec("t", 100'000, model::SparseOptimizerKind::kAdam);
  auto share = model::EmbeddingTable::Create(spec, 0, 1).value();
  std::vector<float> rows(3000 * spec.dim);
  share->Gather(Range(3000), rows.data());  // 3,000 rows, created on touch
  const std::string path = dir.File("share.bin");
  auto writer = TableShareWriter::Open(path, *share, 0, 2, 7).value();
  std::vector<std::vector<float>> held;  // in the order written: ids ascending
  share->ForEachHeld([&](uint64_t id, const float* row) {
    writer->Add(id, row);
    held.emplace_back(row, row + share->stride());
    if (held.size() % 1000 == 0) {
      EXPECT_TRUE(writer->Flush().ok());
    }
  });
  uint64_t bytes = 0;
  const uint32_t crc = writer->Finish(&bytes).value();
  EXPECT_EQ(*FileCrc(path), crc);
  EXPECT_EQ(static_cast<uint64_t>(*FileSize(path)), bytes);
  for (size_t chunk : {size_t{1}, size_t{1000}, size_t{1024}, size_t{5000}}) {
    auto reader = TableShareReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    EXPECT_EQ((*reader)->header().steps, 7u);
    EXPECT_EQ((*reader)->header().epoch, 2);
    std::vector<uint64_t> ids, got_ids;
    std::vector<float> values, got;
    while (true) {
      auto n = (*reader)->Next(chunk, &ids, &values);
      ASSERT_TRUE(n.ok()) << n.status().message();
      if (*n == 0) break;
      EXPECT_LE(*n, chunk);
      got_ids.insert(got_ids.end(), ids.begin(), ids.end());
      got.insert(got.end(), values.begin(), values.end());
    }
    EXPECT_EQ(got_ids, Range(3000)) << "chunk " << chunk;
    for (size_t i = 0; i < 3000; ++i) {
      ASSERT_EQ(std::vector<float>(got.begin() + i * share->stride(),
                                   got.begin() + i * share->stride() + share->stride()),
                held[i]);
    }
  }
  const std::string good = *ReadWhole(path);
  ASSERT_TRUE(WriteWhole(path, good.substr(0, good.size() - 100)).ok());
  EXPECT_FALSE(TableShareReader::Open(path).ok());
  std::string flipped = good;
  flipped[good.size() - 200] ^= 4;
  ASSERT_TRUE(WriteWhole(path, flipped).ok());
  auto reader = TableShareReader::Open(path);
  ASSERT_TRUE(reader.ok());  // the checksum is known only at the end
  std::vector<uint64_t> ids;
  std::vector<float> values;
  Status last = Status::Ok();
  for (int k = 0; k < 10 && last.ok(); ++k) {
    auto n = (*reader)->Next(1000, &ids, &values);
    last = n.status();
    if (n.ok() && *n == 0) break;
  }
  EXPECT_NE(last.message().find("checksum mismatch"), std::string::npos) << last.message();
}

}  // namespace
}  // namespace tarn::runtime

namespace tarn::runtime {
namespace {

// Counts what a merge writes, and the largest single write (its buffer).
class CountingSink : public model::ParamsSink {
 public:
  Status Write(std::span<const float> values) override {
    all.insert(all.end(), values.begin(), values.end());
    largest = std::max(largest, values.size());
    return Status::Ok();
  }
  std::vector<float> all;
  size_t largest = 0;
};

// The model file's table is merged from the servers' shares a chunk at a
// time: it equals the table trained in one process (rows no server holds at
// their initial values), is never written whole at once, and a damaged or
// misplaced share fails the merge.
TEST(SparseTable, TheModelFilesTableIsMergedFromTheSharesAChunkAtATime) {
  TempDir dir;
  Servers ps(4);
  const auto spec = Spec("users", 20'000, model::SparseOptimizerKind::kAdam);
  ASSERT_TRUE(ps.client().Declare(spec).ok());
  auto reference = model::EmbeddingTable::Create(spec).value();
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> id(0, spec.rows - 1);
  std::normal_distribution<float> g(0, 1);
  for (int step = 0; step < 30; ++step) {
    Batch b;
    for (int i = 0; i < 256; ++i) b.ids.push_back(id(rng) % 15'000);  // rows 15,000+ untouched
    for (size_t i = 0; i < b.ids.size() * spec.dim; ++i) b.grads.push_back(g(rng));
    b.weight = 256;
    ASSERT_TRUE(ps.client().Pull("users", b.ids).ok());
    ASSERT_TRUE(ps.client().Push("users", 0, 0, b.ids, b.grads, b.weight).ok());
    ApplyToReference(*reference, b, 0);
  }
  auto shares = ps.client().Checkpoint("users", dir.path(), 0, 1);
  ASSERT_TRUE(shares.ok()) << shares.status().message();
  std::vector<std::string> paths(4);
  for (const auto& s : *shares) paths[static_cast<size_t>(s.ps)] = s.path;

  for (const auto& s : *shares) EXPECT_TRUE(ReadTableShare(s.path)->ascending);
  CountingSink sink;
  Status merged = WriteTableFromShares(spec, paths, sink);
  ASSERT_TRUE(merged.ok()) << merged.message();
  EXPECT_EQ(sink.all, Gathered(*reference, Range(spec.rows)));
  EXPECT_LE(sink.largest, size_t{4096} * spec.dim);  // a bounded buffer, not the table

  std::vector<std::string> swapped = paths;
  std::swap(swapped[1], swapped[2]);
  CountingSink unused;
  Status st = WriteTableFromShares(spec, swapped, unused);
  EXPECT_NE(st.message().find("not part 1 of 4"), std::string::npos) << st.message();
  std::string bytes = *ReadWhole(paths[3]);
  bytes[bytes.size() / 2] ^= 0x40;
  ASSERT_TRUE(WriteWhole(paths[3], bytes).ok());
  EXPECT_FALSE(WriteTableFromShares(spec, paths, unused).ok());

  // A sparsely touched share keeps its hashed index and lists its rows in
  // creation order: its table is gathered whole, with the same result.
  const auto sparse = Spec("sparse", 400'000, model::SparseOptimizerKind::kAdaGrad);
  ASSERT_TRUE(ps.client().Declare(sparse).ok());
  auto sparse_reference = model::EmbeddingTable::Create(sparse).value();
  Batch b;
  for (int i = 0; i < 200; ++i) b.ids.push_back(rng() % sparse.rows);
  for (size_t i = 0; i < b.ids.size() * sparse.dim; ++i) b.grads.push_back(g(rng));
  b.weight = 200;
  ASSERT_TRUE(ps.client().Push("sparse", 0, 0, b.ids, b.grads, b.weight).ok());
  ApplyToReference(*sparse_reference, b, 0);
  auto sparse_shares = ps.client().Checkpoint("sparse", dir.path(), 0, 1);
  ASSERT_TRUE(sparse_shares.ok()) << sparse_shares.status().message();
  for (const auto& s : *sparse_shares) {
    paths[static_cast<size_t>(s.ps)] = s.path;
    EXPECT_FALSE(ReadTableShare(s.path)->ascending);
  }
  CountingSink whole;
  merged = WriteTableFromShares(sparse, paths, whole);
  ASSERT_TRUE(merged.ok()) << merged.message();
  EXPECT_EQ(whole.all, Gathered(*sparse_reference, Range(sparse.rows)));
}

}  // namespace
}  // namespace tarn::runtime
