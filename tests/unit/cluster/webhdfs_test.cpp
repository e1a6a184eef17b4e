#include "cluster/webhdfs.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "../test_util.h"
#include "common/settings.h"
#include "common/strings.h"
#include "data/dataset_reader.h"
#include "data/file_system.h"
#include "data/text_reader.h"
#include "net/http_client.h"
#include "net/http_server.h"

namespace tarn::cluster {
namespace {

using data::ConfigureFileSystems;
using data::CopyTree;
using data::DatasetReader;
using data::DataSource;
using data::FileSystemFor;
using data::ReadOptions;
using data::RowBatch;
using tarn::testing::Gzip;
using tarn::testing::TempDir;

TEST(WebHdfs, PathsInsideHdfs) {
  auto path = WebHdfs::HdfsPathOf("hdfs://nn:8020//user//x/");
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(*path, "/user/x");
  EXPECT_EQ(*WebHdfs::HdfsPathOf("hdfs://nn:8020"), "/");
  EXPECT_EQ(*WebHdfs::HdfsPathOf("/plain"), "/plain");
  EXPECT_FALSE(WebHdfs::HdfsPathOf("relative").ok());
}

TEST(WebHdfs, OperationUrls) {
  WebHdfsOptions o;
  o.scheme_authority = "hdfs://nn:8020";
  o.namenodes = {"nn:9870"};
  o.user = "a user";
  WebHdfs fs(o);
  EXPECT_EQ(fs.OperationUrl("nn:9870", "/data/x y.csv", "OPEN", {{"offset", "10"}}),
            "http://nn:9870/webhdfs/v1/data/x%20y.csv?op=OPEN&user.name=a%20user&offset=10");
  EXPECT_EQ(fs.OperationUrl("nn:9870", "/a", "RENAME", {{"destination", "/b/c&d"}}),
            "http://nn:9870/webhdfs/v1/a?op=RENAME&user.name=a%20user&destination=%2Fb%2Fc%26d");
}

// ---------------------------------------------------------------------------------------------
// WebHDFS against a fake NameNode + DataNode: an in-memory tree behind WebHDFS's REST calls,
// answering as Hadoop 3.5's does (checked against the mini cluster in tests/yarn).

std::map<std::string, std::string> ParseQuery(const std::string& query) {
  std::map<std::string, std::string> out;
  for (const auto& part : Split(query, "&")) {
    auto eq = part.find('=');
    std::string k = part.substr(0, eq), v = eq == std::string::npos ? "" : part.substr(eq + 1);
    std::string decoded;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '%' && i + 2 < v.size()) {
        decoded += static_cast<char>(std::stoi(v.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += v[i];
      }
    }
    out[k] = decoded;
  }
  return out;
}

class FakeHdfs {
 public:
  FakeHdfs() {
    net::HttpServer::Options o;
    o.threads = 2;
    auto s = net::HttpServer::Start(
        o, [this](const net::HttpRequest& req, net::HttpResponse* resp) { Handle(req, resp); });
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    address_ = "127.0.0.1:" + std::to_string(server_->port());
    dirs_.insert("/");
  }
  ~FakeHdfs() { server_->Stop(); }

  const std::string& address() const { return address_; }
  void Put(const std::string& path, const std::string& data) {
    std::lock_guard<std::mutex> l(mu_);
    files_[path] = data;
    AddParents(path);
  }
  std::string Get(const std::string& path) {
    std::lock_guard<std::mutex> l(mu_);
    return files_.count(path) ? files_[path] : "<absent>";
  }
  bool Has(const std::string& path) {
    std::lock_guard<std::mutex> l(mu_);
    return files_.count(path) > 0 || dirs_.count(path) > 0;
  }
  std::vector<std::string> Ops() {
    std::lock_guard<std::mutex> l(mu_);
    return ops_;
  }
  void FailDataNodeWrites() { fail_dn_writes_ = true; }
  // Only requests with delegation=<token> are served (a secured cluster's containers).
  void RequireToken(const std::string& token) {
    std::lock_guard<std::mutex> l(mu_);
    required_token_ = token;
  }
  void StandBy() { standby_ = true; }
  std::set<std::string> Paths() {
    std::lock_guard<std::mutex> l(mu_);
    std::set<std::string> out(dirs_.begin(), dirs_.end());
    for (auto& [p, d] : files_) out.insert(p);
    return out;
  }

 private:
  void AddParents(std::string p) {
    while (true) {
      auto slash = p.find_last_of('/');
      if (slash == 0 || slash == std::string::npos) break;
      p = p.substr(0, slash);
      dirs_.insert(p);
    }
  }
  static std::string Remote(const std::string& exception, const std::string& message) {
    return R"({"RemoteException":{"exception":")" + exception + R"(","javaClassName":"java.io.)" +
           exception + R"(","message":")" + message + "\"}}";
  }
  std::string StatusJson(const std::string& path, const std::string& suffix) {
    const bool dir = dirs_.count(path) > 0;
    const size_t len = dir ? 0 : files_[path].size();
    return R"({"pathSuffix":")" + suffix + R"(","type":")" + (dir ? "DIRECTORY" : "FILE") +
           R"(","length":)" + std::to_string(len) + R"(,"modificationTime":1700000000123})";
  }

  void Handle(const net::HttpRequest& req, net::HttpResponse* resp) {
    std::lock_guard<std::mutex> l(mu_);
    auto q = ParseQuery(req.query);
    const bool dn = StartsWith(req.path, "/dn");
    std::string path = req.path.substr(dn ? 3 : 0);
    if (!StartsWith(path, "/webhdfs/v1")) {
      resp->status = 404;
      return;
    }
    path = path.substr(11);
    if (path.empty()) path = "/";
    const std::string op = q["op"];
    ops_.push_back((dn ? "DN " : "") + op + " " + path +
                   (q.count("user.name") ? " as " + q["user.name"] : "") +
                   (q.count("delegation") ? " token " + q["delegation"] : ""));
    if (!required_token_.empty() && q["delegation"] != required_token_) {
      // As Hadoop 3.5's NameNode answers (checked on tests/yarn/cluster start --kerberos).
      resp->status = 401;
      resp->body = R"({"RemoteException":{"exception":"SecurityException","javaClassName":)"
                   R"("java.lang.SecurityException","message":"Failed to obtain user group )"
                   R"(information: org.apache.hadoop.security.token.SecretManager$InvalidToken: )"
                   R"(token (HDFS_DELEGATION_TOKEN token 7 for root) can't be found in cache"}})";
      return;
    }
    if (standby_ && !dn && q.count("delegation")) {
      // A standby cannot check tokens (as Hadoop 3.5's answers on tests/yarn/cluster --ha).
      resp->status = 403;
      resp->body = R"({"RemoteException":{"exception":"SecurityException","javaClassName":)"
                   R"("java.lang.SecurityException","message":"Failed to obtain user group )"
                   R"(information: org.apache.hadoop.security.token.SecretManager$InvalidToken: )"
                   R"(StandbyException"}})";
      return;
    }
    if (standby_ && !dn) {
      resp->status = 403;
      resp->body =
          Remote("StandbyException", "Operation category READ is not supported in state standby");
      return;
    }
    const bool exists = files_.count(path) || dirs_.count(path);
    if (op == "GETFILESTATUS") {
      if (!exists) {
        resp->status = 404;
        resp->body = Remote("FileNotFoundException", "File does not exist: " + path);
        return;
      }
      resp->body = R"({"FileStatus":)" + StatusJson(path, "") + "}";
    } else if (op == "LISTSTATUS") {
      if (!exists) {
        resp->status = 404;
        resp->body = Remote("FileNotFoundException", "File " + path + " does not exist.");
        return;
      }
      std::string items;
      if (files_.count(path)) {
        items = StatusJson(path, "");
      } else {
        const std::string prefix = path == "/" ? "/" : path + "/";
        std::set<std::string> children;
        for (auto& [p, d] : files_) {
          if (StartsWith(p, prefix) && p.find('/', prefix.size()) == std::string::npos)
            children.insert(p);
        }
        for (auto& p : dirs_) {
          if (p != path && StartsWith(p, prefix) &&
              p.find('/', prefix.size()) == std::string::npos) {
            children.insert(p);
          }
        }
        // Unsorted on purpose: the client sorts.
        std::vector<std::string> v(children.rbegin(), children.rend());
        for (auto& c : v) {
          if (!items.empty()) items += ",";
          items += StatusJson(c, c.substr(prefix.size()));
        }
      }
      resp->body = R"({"FileStatuses":{"FileStatus":[)" + items + "]}}";
    } else if (op == "OPEN" && !dn) {
      resp->status = 307;
      // A secured NameNode's redirect carries the delegation token for the DataNode.
      resp->headers.emplace_back(
          "Location", "http://" + address_ + "/dn/webhdfs/v1" + path +
                          "?op=OPEN&offset=" + q["offset"] + "&length=" + q["length"] +
                          (q.count("delegation") ? "&delegation=" + q["delegation"] : ""));
    } else if (op == "OPEN" && dn) {
      const std::string& data = files_[path];
      const size_t offset = q.count("offset") ? std::stoull(q["offset"]) : 0;
      const size_t length = q.count("length") ? std::stoull(q["length"]) : data.size();
      if (offset >= data.size()) {
        resp->status = 403;
        resp->body =
            Remote("IOException", "Offset=" + std::to_string(offset) + " out of the range");
        return;
      }
      resp->content_type = "application/octet-stream";
      resp->body = data.substr(offset, length);
    } else if (op == "CREATE" && !dn) {
      if (q["noredirect"] == "true") {
        resp->body = R"({"Location":"http://)" + address_ + "/dn/webhdfs/v1" + path +
                     R"(?op=CREATE&overwrite=true"})";
      } else {
        resp->status = 307;
        resp->headers.emplace_back("Location", "http://" + address_ + "/dn/webhdfs/v1" + path);
      }
    } else if (op == "CREATE" && dn) {
      if (fail_dn_writes_) {
        resp->status = 500;
        resp->body = Remote("IOException", "disk full");
        return;
      }
      files_[path] = req.body;
      AddParents(path);
      resp->status = 201;
      resp->body = "";
    } else if (op == "RENAME") {
      const std::string to = q["destination"];
      if (!files_.count(path)) {
        resp->body = R"({"boolean":false})";
        return;
      }
      files_[to] = files_[path];
      files_.erase(path);
      AddParents(to);
      resp->body = "";
    } else if (op == "DELETE") {
      bool any = files_.erase(path) > 0;
      for (auto it = files_.begin(); it != files_.end();) {
        it = StartsWith(it->first, path + "/") ? (any = true, files_.erase(it)) : std::next(it);
      }
      for (auto it = dirs_.begin(); it != dirs_.end();) {
        it = (*it == path || StartsWith(*it, path + "/")) ? (any = true, dirs_.erase(it))
                                                          : std::next(it);
      }
      resp->body = std::string(R"({"boolean":)") + (any ? "true" : "false") + "}";
    } else if (op == "MKDIRS") {
      if (files_.count(path)) {
        resp->status = 403;
        resp->body = Remote("FileAlreadyExistsException", "Path is not a directory: " + path);
        return;
      }
      dirs_.insert(path);
      AddParents(path);
      resp->body = R"({"boolean":true})";
    } else {
      resp->status = 400;
      resp->body = Remote("IllegalArgumentException", "Invalid value for webhdfs parameter \"op\"");
    }
  }

  std::unique_ptr<net::HttpServer> server_;
  std::string address_;
  std::mutex mu_;
  std::map<std::string, std::string> files_;
  std::set<std::string> dirs_;
  std::vector<std::string> ops_;
  std::atomic<bool> fail_dn_writes_{false};
  std::atomic<bool> standby_{false};
  std::string required_token_;
};

std::unique_ptr<WebHdfs> Connect(const FakeHdfs& hdfs, size_t block = 8 << 20) {
  WebHdfsOptions o;
  o.scheme_authority = "hdfs://fake:8020";
  o.namenodes = {hdfs.address()};
  o.user = "tester";
  o.read_block_bytes = block;
  return std::make_unique<WebHdfs>(o);
}

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131) % 251);
  return s;
}

TEST(WebHdfs, StatListAndErrors) {
  FakeHdfs hdfs;
  hdfs.Put("/data/b.csv", "bb");
  hdfs.Put("/data/a.csv", "aaa");
  hdfs.Put("/data/part/x", "x");
  auto fs = Connect(hdfs);

  auto st = fs->Stat("hdfs://fake:8020/data/a.csv");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->length, 3u);
  EXPECT_FALSE(st->is_dir);
  EXPECT_EQ(st->modification_time_ms, 1700000000123);
  EXPECT_EQ(st->name, "a.csv");
  EXPECT_TRUE(fs->Stat("hdfs://fake:8020/data")->is_dir);

  auto list = fs->List("hdfs://fake:8020/data/");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].path, "hdfs://fake:8020/data/a.csv");
  EXPECT_EQ((*list)[1].name, "b.csv");
  EXPECT_TRUE((*list)[2].is_dir);
  EXPECT_EQ(fs->List("hdfs://fake:8020/data/a.csv").status().code(), StatusCode::kInvalidArgument);

  auto missing = fs->Stat("hdfs://fake:8020/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("hdfs://fake:8020/nope"), std::string::npos);
  EXPECT_NE(missing.status().message().find("FileNotFoundException"), std::string::npos);
  EXPECT_EQ(hdfs.Ops()[0], "GETFILESTATUS /data/a.csv as tester");
}

TEST(WebHdfs, ReadsInBlocksWithOffsetsThroughTheDataNodeRedirect) {
  FakeHdfs hdfs;
  const std::string data = Pattern(10000);
  hdfs.Put("/big.bin", data);
  auto fs = Connect(hdfs, /*block=*/3000);
  auto f = fs->OpenRead("hdfs://fake:8020/big.bin");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->size(), 10000u);
  std::string got;
  char buf[1024];
  while (true) {
    auto n = (*f)->Read(buf, sizeof(buf));
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    if (*n == 0) break;
    got.append(buf, *n);
  }
  EXPECT_EQ(got, data);
  int opens = 0;
  for (const auto& op : hdfs.Ops()) opens += StartsWith(op, "DN OPEN") ? 1 : 0;
  EXPECT_EQ(opens, 4);  // 3000 + 3000 + 3000 + 1000

  char tail[5];
  ASSERT_TRUE((*f)->ReadAt(9995, tail, 5).ok());
  EXPECT_EQ(std::string(tail, 5), data.substr(9995));
  EXPECT_FALSE((*f)->ReadAt(9998, tail, 5).ok());
  ASSERT_TRUE((*f)->Seek(4321).ok());
  auto n = (*f)->Read(buf, 10);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(buf, *n), data.substr(4321, *n));

  hdfs.Put("/empty", "");
  auto empty = fs->OpenRead("hdfs://fake:8020/empty");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*(*empty)->Read(buf, 10), 0u);  // no OPEN past the end, which HDFS refuses
  EXPECT_EQ(fs->OpenRead("hdfs://fake:8020/").status().code(), StatusCode::kInvalidArgument);
}

TEST(WebHdfs, WritesUnderATemporaryNameThenRenames) {
  FakeHdfs hdfs;
  hdfs.Put("/out/model.bin", "old");
  auto fs = Connect(hdfs);
  {
    auto w = fs->OpenWrite("hdfs://fake:8020/out/model.bin");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write("new ").ok());
    EXPECT_EQ(hdfs.Get("/out/model.bin"), "old");  // nothing is sent before Commit
    ASSERT_TRUE((*w)->Write("model").ok());
    ASSERT_TRUE((*w)->Commit().ok());
  }
  EXPECT_EQ(hdfs.Get("/out/model.bin"), "new model");
  std::vector<std::string> ops = hdfs.Ops();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_TRUE(StartsWith(ops[0], "CREATE /out/.model.bin.tarn-tmp-")) << ops[0];
  EXPECT_TRUE(StartsWith(ops[1], "DN CREATE /out/.model.bin.tarn-tmp-")) << ops[1];
  EXPECT_TRUE(StartsWith(ops[2], "RENAME /out/.model.bin.tarn-tmp-")) << ops[2];
  for (const auto& p : hdfs.Paths()) EXPECT_EQ(p.find("tarn-tmp"), std::string::npos) << p;

  // An abandoned writer sends nothing.
  { ASSERT_TRUE(fs->OpenWrite("hdfs://fake:8020/out/never").ok()); }
  EXPECT_FALSE(hdfs.Has("/out/never"));
  EXPECT_EQ(hdfs.Ops().size(), 3u);
}

TEST(WebHdfs, AFailedUploadLeavesTheTargetAndNoTemporaryFile) {
  FakeHdfs hdfs;
  hdfs.Put("/out/model.bin", "old");
  hdfs.FailDataNodeWrites();
  auto fs = Connect(hdfs);
  Status s = fs->WriteAll("hdfs://fake:8020/out/model.bin", "new");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("hdfs://fake:8020/out/model.bin"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("disk full"), std::string::npos) << s.message();
  EXPECT_EQ(hdfs.Get("/out/model.bin"), "old");
  for (const auto& p : hdfs.Paths()) EXPECT_EQ(p.find("tarn-tmp"), std::string::npos) << p;
  EXPECT_TRUE(StartsWith(hdfs.Ops().back(), "DELETE /out/.model.bin.tarn-tmp-"));
}

TEST(WebHdfs, MkdirsDeleteRename) {
  FakeHdfs hdfs;
  auto fs = Connect(hdfs);
  ASSERT_TRUE(fs->MakeDirs("hdfs://fake:8020/a/b/c").ok());
  EXPECT_TRUE(hdfs.Has("/a/b/c"));
  ASSERT_TRUE(fs->WriteAll("hdfs://fake:8020/a/b/c/f", "f").ok());
  Status not_dir = fs->MakeDirs("hdfs://fake:8020/a/b/c/f");
  EXPECT_EQ(not_dir.code(), StatusCode::kFailedPrecondition) << not_dir.message();
  ASSERT_TRUE(fs->Rename("hdfs://fake:8020/a/b/c/f", "hdfs://fake:8020/a/g").ok());
  EXPECT_EQ(hdfs.Get("/a/g"), "f");
  Status gone = fs->Rename("hdfs://fake:8020/a/b/c/f", "hdfs://fake:8020/a/h");
  EXPECT_FALSE(gone.ok());
  ASSERT_TRUE(fs->Delete("hdfs://fake:8020/a", true).ok());
  EXPECT_FALSE(hdfs.Has("/a/g"));
  EXPECT_TRUE(fs->Delete("hdfs://fake:8020/never", false).ok());
}

TEST(WebHdfs, MovesOnFromAStandbyOrUnreachableNameNode) {
  FakeHdfs standby, active;
  standby.StandBy();
  active.Put("/x", "from the active one");
  int dead_port = 0;
  {
    auto s = net::HttpServer::Start(net::HttpServer::Options{},
                                    [](const net::HttpRequest&, net::HttpResponse*) {});
    ASSERT_TRUE(s.ok());
    dead_port = (*s)->port();
  }
  WebHdfsOptions o;
  o.scheme_authority = "hdfs://ha";
  o.namenodes = {"127.0.0.1:" + std::to_string(dead_port), standby.address(), active.address()};
  WebHdfs fs(o);
  auto text = fs.ReadAll("hdfs://ha/x");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "from the active one");
  EXPECT_EQ(standby.Ops().size(), 1u);
  // The active NameNode is asked first from now on.
  ASSERT_TRUE(fs.Stat("hdfs://ha/x").ok());
  EXPECT_EQ(standby.Ops().size(), 1u);

  WebHdfsOptions none;
  none.scheme_authority = "hdfs://nowhere";
  WebHdfs empty(none);
  auto s = empty.Stat("hdfs://nowhere/x");
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("dfs.namenode.http-address"), std::string::npos);
}

// A container's token on an HA nameservice: the standby, asked first, cannot check it.
TEST(WebHdfs, ADelegationTokenMovesOnFromAStandbyThatCannotCheckIt) {
  FakeHdfs standby, active;
  standby.StandBy();
  active.Put("/x", "from the active one");
  active.RequireToken("ha-token");
  WebHdfsOptions o;
  o.scheme_authority = "hdfs://ns1";
  o.namenodes = {standby.address(), active.address()};
  o.kerberos = true;
  o.delegation_token = "ha-token";
  WebHdfs fs(o);
  auto text = fs.ReadAll("hdfs://ns1/x");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "from the active one");
  EXPECT_EQ(standby.Ops().size(), 1u);
  // Only that standby: it is unavailable, not a refused token.
  o.namenodes = {standby.address()};
  WebHdfs alone(o);
  auto s = alone.Stat("hdfs://ns1/x");
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status().ToString();
  EXPECT_EQ(s.status().message().find("refused the delegation token"), std::string::npos);
  EXPECT_NE(s.status().message().find("standby"), std::string::npos) << s.status().ToString();
}

// The data readers take hdfs:// paths, with the NameNode from -D settings.
TEST(WebHdfs, ADelegationTokenReplacesTheUserAndARefusedOneIsAClearError) {
  FakeHdfs hdfs;
  hdfs.Put("/data/a.csv", "1,2\n3,4\n");
  hdfs.RequireToken("good-token");
  WebHdfsOptions o;
  o.scheme_authority = "hdfs://fake:8020";
  o.namenodes = {hdfs.address()};
  o.user = "tester";
  o.kerberos = true;
  o.delegation_token = "good-token";
  WebHdfs fs(o);
  auto data = fs.ReadAll("hdfs://fake:8020/data/a.csv");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(*data, "1,2\n3,4\n");
  const auto ops = hdfs.Ops();
  ASSERT_FALSE(ops.empty());
  for (const auto& op : ops) {
    EXPECT_NE(op.find(" token good-token"), std::string::npos) << op;
    EXPECT_EQ(op.find(" as "), std::string::npos) << op;  // no user.name beside a token
  }
  // A token login cannot ask for more tokens (the NameNode would refuse it too).
  EXPECT_EQ(fs.GetDelegationToken("yarn", "127.0.0.1:8020").status().code(),
            StatusCode::kFailedPrecondition);

  o.delegation_token = "forged-token";
  WebHdfs forged(o);
  auto refused = forged.Stat("hdfs://fake:8020/data/a.csv");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  const std::string& m = refused.status().message();
  EXPECT_NE(m.find("hdfs://fake:8020/data/a.csv"), std::string::npos) << m;
  EXPECT_NE(m.find("refused the delegation token"), std::string::npos) << m;
  EXPECT_NE(m.find("can't be found in cache"), std::string::npos) << m;
}

TEST(WebHdfs, DatasetReaderReadsAnHdfsFolderOfPlainAndGzipParts) {
  FakeHdfs hdfs;
  std::string part0 = "id|name|score\n", part1;
  for (int i = 0; i < 3000; ++i) {
    (i < 1500 ? part0 : part1) +=
        std::to_string(i) + "|n" + std::to_string(i % 7) + "|" + std::to_string(i * 0.25) + "\n";
  }
  hdfs.Put("/user/t/data/part-00000", part0);
  hdfs.Put("/user/t/data/part-00001.gz", Gzip(part1));
  hdfs.Put("/user/t/data/_SUCCESS", "");
  hdfs.Put("/user/t/data/.part-00002.crc", "junk");

  Settings settings;
  ASSERT_TRUE(settings.ApplyOverride("fs.defaultFS=hdfs://fake:8020").ok());
  ASSERT_TRUE(settings.ApplyOverride("dfs.namenode.rpc-address=fake:8020").ok());
  ASSERT_TRUE(settings.ApplyOverride("dfs.namenode.http-address=" + hdfs.address()).ok());
  ASSERT_TRUE(settings.ApplyOverride("tarn.hdfs.user=reader").ok());
  ASSERT_TRUE(settings.ApplyOverride("tarn.hdfs.read-block-mb=1").ok());
  ASSERT_TRUE(settings.ApplyOverride("tarn.hadoop.conf-dir=").ok());
  RegisterHdfsFileSystems();
  ConfigureFileSystems(settings);

  DataSource src;
  src.data_path = "hdfs:///user/t/data";  // the default file system's authority
  auto reader = DatasetReader::Open(src);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(reader->columns(), (std::vector<std::string>{"id", "name", "score"}));
  ASSERT_EQ(reader->files().size(), 2u);
  EXPECT_EQ(reader->files()[1], "hdfs:///user/t/data/part-00001.gz");

  ReadOptions ro;
  ro.threads = 2;
  ro.chunk_bytes = 4096;
  std::mutex mu;
  std::set<long> ids;
  auto summary = reader->ForEachBatch(ro, [&](int, const RowBatch& b) {
    std::lock_guard<std::mutex> l(mu);
    for (size_t r = 0; r < b.size(); ++r) ids.insert(std::stol(std::string(b.field(r, 0))));
    return Status::Ok();
  });
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->rows, 3000u);
  ASSERT_EQ(ids.size(), 3000u);
  EXPECT_EQ(*ids.rbegin(), 2999);
  bool as_reader = false;
  for (const auto& op : hdfs.Ops())
    as_reader = as_reader || op.find(" as reader") != std::string::npos;
  EXPECT_TRUE(as_reader);

  src.data_path = "hdfs:///user/t/missing";
  auto missing = DatasetReader::Open(src);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("hdfs:///user/t/missing"), std::string::npos);

  // Copy the folder out of HDFS and back in, as job staging does.
  TempDir local;
  ASSERT_TRUE(CopyTree("hdfs:///user/t/data", local.File("copy")).ok());
  auto lfs = FileSystemFor(local.path());
  EXPECT_EQ(*(*lfs)->ReadAll(local.File("copy/part-00000")), part0);
  ASSERT_TRUE(CopyTree(local.File("copy"), "hdfs:///user/t/back").ok());
  EXPECT_EQ(hdfs.Get("/user/t/back/part-00000"), part0);
  EXPECT_EQ(hdfs.Get("/user/t/back/part-00001.gz"), Gzip(part1));

  ConfigureFileSystems(Settings());  // back to the defaults for other tests
}

}  // namespace
}  // namespace tarn::cluster
