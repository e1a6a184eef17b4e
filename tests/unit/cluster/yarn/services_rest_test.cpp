#include "cluster/yarn/services_rest.h"

#include <gtest/gtest.h>

#include <string>

#include "common/files.h"
#include "test_util.h"

namespace tarn::cluster::yarn {
namespace {

std::string Fixture(const std::string& name) {
  auto text = ReadFile(testing::SourceDir() + "/tests/unit/cluster/yarn/fixtures/" + name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

// fixtures/README.md: GET /app/v1/services/tarn-sleeper as Hadoop 3.4.2's RM answered it, the
// sleeper flexed to two READY containers.
TEST(ServicesRestTest, ParsesHadoopsAnswerForAStableService) {
  auto s = ServicesClient::ParseStatus(Fixture("service-stable.json"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->name, "tarn-sleeper");
  EXPECT_EQ(s->id, "application_1796221542480_0001");
  EXPECT_EQ(s->state, "STABLE");
  EXPECT_FALSE(s->Done());
  ASSERT_EQ(s->components.size(), 1u);
  const ServiceComponentStatus* c = s->Component("sleeper");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->state, "STABLE");
  EXPECT_EQ(c->number_of_containers, 2);
  EXPECT_EQ(c->restart_policy, "ALWAYS");
  ASSERT_EQ(c->containers.size(), 2u);
  EXPECT_EQ(c->containers[0].id, "container_1796221542480_0001_01_000002");
  EXPECT_EQ(c->containers[0].component_instance_name, "sleeper-0");
  EXPECT_EQ(c->containers[0].state, "READY");
  EXPECT_EQ(c->containers[0].bare_host, "localhost");
  EXPECT_EQ(c->containers[0].hostname, "");  // not in this answer: it has bare_host only
  EXPECT_EQ(c->containers[1].component_instance_name, "sleeper-1");
  EXPECT_EQ(s->Component("nope"), nullptr);
}

// A stopped service keeps its id and loses its components.
TEST(ServicesRestTest, ParsesHadoopsAnswerForAStoppedService) {
  auto s = ServicesClient::ParseStatus(Fixture("service-stopped.json"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->state, "STOPPED");
  EXPECT_TRUE(s->Done());
  EXPECT_EQ(s->id, "application_1796221542480_0001");
  EXPECT_TRUE(s->components.empty());
}

TEST(ServicesRestTest, RefusesAnAnswerThatIsNotAnObject) {
  auto s = ServicesClient::ParseStatus("<html>404</html>");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace tarn::cluster::yarn
