// Model files: a model saved with its parameters streamed is the same file,
// byte for byte, as one saved from memory, and a stream that falls short or
// fails writes nothing.
#include "model/model_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/files.h"
#include "test_util.h"

namespace tarn::model {
namespace {

using tarn::testing::TempDir;

ModelFile SmallModel() {
  ModelFile m;
  m.spec.input_count = 3;
  m.spec.layers = {{3, 2, Activation::kTanh, 0}, {2, 1, Activation::kSigmoid, 0}};
  m.norm_type = "ZSCALE";
  m.training = {{"algorithm", "NN"}};
  for (size_t i = 0; i < m.spec.ParameterCount(); ++i) m.params.push_back(0.25f * float(i) - 1);
  return m;
}

TEST(ModelFile, AStreamedSaveWritesTheSameFileAsASaveFromMemory) {
  TempDir dir;
  const ModelFile m = SmallModel();
  ASSERT_TRUE(m.Save(dir.File("whole.tarn")).ok());
  ModelFile header_only = m;
  header_only.params.clear();
  // Written a value at a time, as a merge of table shares writes them.
  auto streamed = header_only.SaveStreaming(dir.File("streamed.tarn"), [&](ParamsSink& sink) {
    for (float v : m.params) TARN_RETURN_IF_ERROR(sink.Write(std::span<const float>(&v, 1)));
    return Status::Ok();
  });
  ASSERT_TRUE(streamed.ok()) << streamed.message();
  EXPECT_EQ(*ReadFile(dir.File("streamed.tarn")), *ReadFile(dir.File("whole.tarn")));
}

TEST(ModelFile, AStreamThatWritesTooFewParametersOrFailsLeavesNoFile) {
  TempDir dir;
  const ModelFile m = SmallModel();
  const std::string path = dir.File("model.tarn");
  auto short_write = m.SaveStreaming(path, [&](ParamsSink& sink) {
    return sink.Write(std::span<const float>(m.params).first(m.params.size() - 1));
  });
  EXPECT_FALSE(short_write.ok());
  EXPECT_NE(short_write.message().find("parameters written"), std::string::npos)
      << short_write.message();
  auto failed = m.SaveStreaming(path, [](ParamsSink&) { return Corrupt("share 2: bad checksum"); });
  EXPECT_NE(failed.message().find("share 2: bad checksum"), std::string::npos) << failed.message();
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "no temporary file is left behind";
}

}  // namespace
}  // namespace tarn::model
