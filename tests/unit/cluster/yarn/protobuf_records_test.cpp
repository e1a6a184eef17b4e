#include "cluster/yarn/protobuf_records.h"

#include <gtest/gtest.h>

#include "cluster/yarn/sasl.h"

namespace tarn::cluster::yarn {
namespace {

std::string Hex(std::string_view s) { return HexEncode(s); }

TEST(YarnRecords, ContainerIdsPrintAndParseAsYarnDoes) {
  ContainerId id{ApplicationAttemptId{ApplicationId{7, 1700000000123}, 2}, 15};
  EXPECT_EQ(id.ToString(), "container_1700000000123_0007_02_000015");
  EXPECT_EQ(id.attempt.ToString(), "appattempt_1700000000123_0007_000002");
  EXPECT_EQ(id.attempt.app.ToString(), "application_1700000000123_0007");
  // After an RM restart the epoch sits above bit 40 of the id.
  ContainerId with_epoch = id;
  with_epoch.id = (int64_t{3} << 40) | 1234567;
  EXPECT_EQ(with_epoch.ToString(), "container_e3_1700000000123_0007_02_1234567");
  for (const ContainerId& c : {id, with_epoch}) {
    auto back = ContainerId::Parse(c.ToString());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, c);
  }
  for (const char* bad : {"container_1_2_3", "application_1_0001", "container_x_0001_01_000001",
                          "container_ex_1_0001_01_000001", ""}) {
    EXPECT_FALSE(ContainerId::Parse(bad).ok()) << bad;
  }
}

TEST(YarnRecords, AllocateRequestAgainstHandBuiltBytes) {
  AllocateRequest request;
  Resource capability{512, 1, {{kGpuResource, 1}}};
  request.asks.push_back(ResourceRequest{2, "*", capability, 3, true});
  request.response_id = 5;
  request.progress = 0.5f;
  const std::string gpu = "0a0b" + Hex("yarn.io/gpu") + "1001";  // ResourceInformationProto
  const std::string resource =
      "088004"
      "1001"
      "1a0f" +
      gpu;  // memory 512, vcores 1
  const std::string ask =
      "0a020802"
      "12012a"
      "1a16" +
      resource +
      "2003"
      "2801";
  EXPECT_EQ(Hex(EncodeAllocateRequest(request)), "0a23" + ask +
                                                     "2005"
                                                     "2d0000003f");
}

TEST(YarnRecords, ContainerAndStatusRoundTripWithNegativeExitStatus) {
  Container c;
  c.id = ContainerId{ApplicationAttemptId{ApplicationId{1, 99}, 1}, 2};
  c.node = NodeId{"node-1", 45454};
  c.node_http_address = "node-1:8042";
  c.resource = Resource{1024, 2, {{kGpuResource, 2}}};
  c.priority = 3;
  c.container_token = Token{"id", "pw", "ContainerToken", "node-1:45454"};
  auto back = DecodeContainer(EncodeContainer(c));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->id, c.id);
  EXPECT_EQ(back->node, c.node);
  EXPECT_EQ(back->resource, c.resource);
  EXPECT_EQ(back->priority, 3);
  EXPECT_EQ(back->container_token, c.container_token);

  ContainerStatus s{c.id, ContainerState::kComplete, "killed", -105};
  auto status = DecodeContainerStatus(EncodeContainerStatus(s));
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->exit_status, -105);
  EXPECT_EQ(status->state, ContainerState::kComplete);
  EXPECT_STREQ(ContainerExitStatusName(-105), "KILLED_BY_APPMASTER");
  EXPECT_EQ(ContainerExitStatusName(1), nullptr);
}

TEST(YarnRecords, AllocateResponseWithEveryFieldTheAmReads) {
  Container c;
  c.id = ContainerId{ApplicationAttemptId{ApplicationId{1, 99}, 1}, 2};
  c.node = NodeId{"h", 1};
  ProtoWriter node;
  node.Bytes(1, "h");
  node.Int(2, 1);
  ProtoWriter nm_token;
  nm_token.Message(1, node);
  nm_token.Bytes(2, EncodeToken(Token{"i", "p", "NMToken", "h:1"}));
  ProtoWriter w;
  w.Int(1, 1);  // AM_RESYNC
  w.Int(2, 17);
  w.Bytes(3, EncodeContainer(c));
  w.Bytes(4, EncodeContainerStatus(ContainerStatus{c.id, ContainerState::kComplete, "", 0}));
  w.Int(7, 2);
  w.Message(9, nm_token);
  w.Bytes(12, EncodeToken(Token{"new-id", "new-pw", "YARN_AM_RM_TOKEN", ""}));
  w.Bytes(17, EncodeContainer(c));
  w.Bytes(99, "a field tarn does not know");
  auto r = DecodeAllocateResponse(w.data());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->am_command, AmCommand::kResync);
  EXPECT_EQ(r->response_id, 17);
  ASSERT_EQ(r->allocated.size(), 1u);
  EXPECT_EQ(r->allocated[0].id, c.id);
  ASSERT_EQ(r->completed.size(), 1u);
  EXPECT_EQ(r->num_cluster_nodes, 2);
  ASSERT_EQ(r->nm_tokens.size(), 1u);
  EXPECT_EQ(r->nm_tokens[0].node.ToString(), "h:1");
  ASSERT_TRUE(r->am_rm_token.has_value());
  EXPECT_EQ(r->am_rm_token->password, "new-pw");
  EXPECT_EQ(r->containers_from_previous_attempts.size(), 1u);
  // A damaged nested message fails with the message's name.
  ProtoWriter bad;
  bad.Bytes(3, "\x0a\x09");
  auto broken = DecodeAllocateResponse(bad.data());
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("ContainerProto"), std::string::npos);
}

TEST(YarnRecords, LaunchContextCarriesResourcesEnvironmentAndCommand) {
  StartRequest start;
  start.context.local_resources["tarn"] =
      LocalResource{"hdfs://nn:8020/app/tarn", 10, 20, LocalResourceType::kFile,
                    LocalResourceVisibility::kApplication};
  start.context.environment["A"] = "1";
  start.context.commands = {"./tarn node"};
  start.container_token = Token{"i", "p", "ContainerToken", "h:1"};
  auto bytes = EncodeStartContainersRequest({start});
  ASSERT_TRUE(bytes.ok());
  auto outer = ProtoMessage::Parse(*bytes, "StartContainersRequestProto");
  auto request = ProtoMessage::Parse(outer->Bytes(1), "StartContainerRequestProto");
  auto context = ProtoMessage::Parse(request->Bytes(1), "ContainerLaunchContextProto");
  ASSERT_TRUE(context.ok());
  EXPECT_EQ(context->String(5), "./tarn node");
  auto entry = ProtoMessage::Parse(context->Bytes(1), "StringLocalResourceMapProto");
  EXPECT_EQ(entry->String(1), "tarn");
  auto resource = ProtoMessage::Parse(entry->Bytes(2), "LocalResourceProto");
  EXPECT_EQ(resource->Int64(2), 10);
  EXPECT_EQ(resource->Int64(3), 20);
  EXPECT_EQ(resource->Int32(4), 2);  // FILE
  EXPECT_EQ(resource->Int32(5), 3);  // APPLICATION
  auto url = ProtoMessage::Parse(resource->Bytes(1), "URLProto");
  EXPECT_EQ(url->String(1), "hdfs");
  EXPECT_EQ(url->String(2), "nn");
  EXPECT_EQ(url->Int32(3), 8020);
  EXPECT_EQ(url->String(4), "/app/tarn");
  auto token = DecodeToken(request->Bytes(2));
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->kind, "ContainerToken");

  start.context.local_resources["bad"] = LocalResource{"no-scheme", 1, 1};
  EXPECT_FALSE(EncodeStartContainersRequest({start}).ok());
}

TEST(YarnRecords, ResourceUrls) {
  auto hdfs = ParseResourceUrl("hdfs://user@nn.example:8020/a/b");
  ASSERT_TRUE(hdfs.ok());
  EXPECT_EQ(hdfs->scheme, "hdfs");
  EXPECT_EQ(hdfs->user_info, "user");
  EXPECT_EQ(hdfs->host, "nn.example");
  EXPECT_EQ(hdfs->port, 8020);
  EXPECT_EQ(hdfs->file, "/a/b");
  auto local = ParseResourceUrl("file:///tmp/x");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->host, "");
  EXPECT_EQ(local->port, -1);
  EXPECT_EQ(local->file, "/tmp/x");
  auto bare = ParseResourceUrl("/tmp/y");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->scheme, "file");
  EXPECT_FALSE(ParseResourceUrl("hdfs://nn:99999/x").ok());
  EXPECT_FALSE(ParseResourceUrl("relative/path").ok());
}

}  // namespace
}  // namespace tarn::cluster::yarn
