#include "pipeline/shifu_tensorflow.h"

#include <gtest/gtest.h>

#include <set>

#include "common/files.h"
#include "common/strings.h"
#include "data/shard.h"
#include "data/text_reader.h"
#include "net/sha256.h"
#include "test_util.h"

namespace tarn::pipeline {
namespace {

using data::Json;
using tarn::testing::TempDir;

TEST(ShifuTensorflow, ScriptNameFollowsTrainModelProcessor) {
  EXPECT_EQ(*ShifuScriptName(Json::object()), "distributed_tf_keras.py");
  EXPECT_EQ(*ShifuScriptName(Json{{"TF_type", "tensor"}}), "distributed_tf_tensor.py");
  // Shifu's docs write TF_Type; its code reads TF_type. Both are read, lower-cased.
  EXPECT_EQ(*ShifuScriptName(Json{{"TF_Type", "Tensor"}}), "distributed_tf_tensor.py");
  EXPECT_EQ(*ShifuScriptName(Json{{"TF_type", "Keras"}, {"TF_Type", "keras"}}),
            "distributed_tf_keras.py");
  EXPECT_EQ(*ShifuScriptName(Json{{"TF.version", "2.0"}}), "distributed_tf20_keras.py");
  // Shifu compares TF.version with the string "2.0" only.
  EXPECT_EQ(*ShifuScriptName(Json{{"TF.version", "1.0"}}), "distributed_tf_keras.py");
  auto disagree = ShifuScriptName(Json{{"TF_type", "keras"}, {"TF_Type", "tensor"}});
  ASSERT_FALSE(disagree.ok());
  EXPECT_NE(disagree.status().message().find("disagree"), std::string::npos);
  EXPECT_FALSE(ShifuScriptName(Json{{"TF_type", 3}}).ok());
  EXPECT_FALSE(ShifuScriptName(Json{{"TF_type", "../x"}}).ok());
}

TEST(ShifuTensorflow, StockDigestsAreSha256OfWholeFiles) {
  // The published SHA-256 test vector: the digest tarn compares is the standard one.
  EXPECT_EQ(net::Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::set<std::string_view> seen;
  for (const auto& s : ShifuStockScripts()) {
    EXPECT_EQ(s.sha256.size(), 64u) << s.name;
    EXPECT_TRUE(seen.insert(s.sha256).second) << s.name << " twice";
    EXPECT_TRUE(StartsWith(s.name, "distributed_tf")) << s.name;
  }
  for (const char* name :
       {"distributed_tf_keras.py", "distributed_tf_tensor.py", "distributed_tf20_keras.py"}) {
    EXPECT_TRUE(std::any_of(ShifuStockScripts().begin(), ShifuStockScripts().end(),
                            [&](const auto& s) { return s.name == name; }))
        << name;
  }
  EXPECT_EQ(FindShifuStockScript("def model(shifu_context):\n    pass\n"), nullptr);
}

// A TensorFlow model set in `dir` with runMode `run_mode`.
ModelSet TensorflowModelSet(const std::string& dir, const std::string& run_mode) {
  ModelSet ms;
  ms.dir = dir;
  ms.config.train.algorithm = "TensorFlow";
  ms.config.run_mode = run_mode;
  return ms;
}

TEST(ShifuTensorflow, TheRuleAndItsReasons) {
  TempDir dir;
  ModelSet ms = TensorflowModelSet(dir.path(), "DIST");
  // No script in the model set: the native engine, saying why.
  auto d = DecideShifuScript(ms, false);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_TRUE(d->has_value());
  EXPECT_FALSE((*d)->run_script);
  EXPECT_NE((*d)->reason.find("has no distributed_tf_keras.py"), std::string::npos);
  EXPECT_NE((*d)->Line().find("tarn's native engine trains"), std::string::npos);

  // An edited script runs, and the line says it differs from every stock copy.
  dir.Write("distributed_tf_keras.py", "def model(shifu_context):\n    return None\n");
  d = DecideShifuScript(ms, false);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE((*d)->run_script);
  EXPECT_TRUE((*d)->edited);
  EXPECT_NE((*d)->reason.find("differs from every Shifu stock copy"), std::string::npos);
  EXPECT_EQ((*d)->script, dir.File("distributed_tf_keras.py"));

  // tarn.train.script=native: the engine, still saying the script differs.
  ASSERT_TRUE(ms.settings.Set("tarn.train.script", "native", "test").ok());
  d = DecideShifuScript(ms, false);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE((*d)->run_script);
  EXPECT_TRUE((*d)->edited);
  EXPECT_NE((*d)->reason.find("tarn.train.script=native"), std::string::npos);

  // runMode LOCAL: Shifu runs the script only in DIST or MAPRED...
  ModelSet local = TensorflowModelSet(dir.path(), "LOCAL");
  d = DecideShifuScript(local, false);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE((*d)->run_script);
  EXPECT_NE((*d)->reason.find("runMode LOCAL"), std::string::npos);
  // ...unless tarn train --yarn makes it distributed, or tarn.train.script=run forces it.
  EXPECT_TRUE((*DecideShifuScript(local, true))->run_script);
  ASSERT_TRUE(local.settings.Set("tarn.train.script", "run", "test").ok());
  EXPECT_TRUE((*DecideShifuScript(local, false))->run_script);

  // TF_Type tensor names the other script, which is absent: run is refused.
  local.config.train.params = Json{{"TF_Type", "tensor"}};
  auto missing = DecideShifuScript(local, false);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("distributed_tf_tensor.py does not exist"),
            std::string::npos);

  ASSERT_TRUE(ms.settings.Set("tarn.train.script", "always", "test").ok());
  EXPECT_FALSE(DecideShifuScript(ms, false).ok());

  // Other algorithms involve no script.
  ms.config.train.algorithm = "NN";
  d = DecideShifuScript(ms, false);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->has_value());
}

PythonFacts Facts(const std::string& python, const std::string& tf, bool tf_keras = false) {
  PythonFacts f;
  f.python_version = python;
  f.tensorflow_version = tf;
  f.tf_keras = tf_keras;
  return f;
}

TEST(ShifuTensorflow, ChecksNameTheBlockingApiLineAndVersions) {
  // What Shifu's Python 2 distributed_tf_keras.py has at its top (written here, not copied).
  const std::string py2 =
      "import tensorflow as tf\n"
      "from StringIO import StringIO\n"
      "# tf.contrib in a comment is no use\n"
      "from tensorflow.python.estimator import model_fn as model_fn_lib\n"
      "step = sys.maxint\n"
      "server = tf.train.Server(cluster)\n";
  Status s =
      CheckScriptRunnable("ms/distributed_tf_keras.py", py2, Facts("3.11.7", "2.21.0"), "python3");
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_NE(m.find("ms/distributed_tf_keras.py cannot run on tarn.train.script.python 'python3' "
                   "is Python 3.11.7 with TensorFlow 2.21.0"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("line 2: StringIO: a Python 2 module"), std::string::npos) << m;
  EXPECT_NE(m.find("line 4: tf.estimator: removed in TensorFlow 2.16"), std::string::npos) << m;
  EXPECT_NE(m.find("line 5: sys.maxint"), std::string::npos) << m;
  EXPECT_NE(m.find("line 6: tf.train.Server: TensorFlow 1.x"), std::string::npos) << m;
  EXPECT_EQ(m.find("tf.contrib"), std::string::npos) << m;

  // Shifu's TF 2 port: tf.estimator and Keras 2 calls, fine on 2.15, not on 2.21.
  const std::string tf20 =
      "import tensorflow as tf\n"
      "class Hook(tf.estimator.SessionRunHook):\n"
      "    pass\n"
      "tf.keras.backend.set_learning_phase(True)\n"
      "server = tf.compat.v1.train.Server(cluster)\n";
  EXPECT_TRUE(CheckScriptRunnable("s.py", tf20, Facts("3.11.7", "2.15.1"), "py").ok());
  s = CheckScriptRunnable("s.py", tf20, Facts("3.11.7", "2.21.0"), "py");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("line 2: tf.estimator"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("line 4: keras.backend.set_learning_phase: Keras 2 only"),
            std::string::npos)
      << s.message();
  // tf-keras gives Keras 2 back; tf.estimator stays gone.
  s = CheckScriptRunnable("s.py", tf20, Facts("3.11.7", "2.21.0", true), "py");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().find("set_learning_phase"), std::string::npos) << s.message();

  // tf.contrib on TensorFlow 2; TF 1 names are fine under `import tensorflow.compat.v1 as tf`.
  s = CheckScriptRunnable("t.py", "import tensorflow as tf\nx = tf.contrib.layers.l2(1)\n",
                          Facts("3.10.0", "2.5.0"), "py");
  EXPECT_NE(s.message().find("line 2: tf.contrib: removed in TensorFlow 2.0"), std::string::npos);
  EXPECT_TRUE(CheckScriptRunnable("t.py",
                                  "import tensorflow.compat.v1 as tf\ns = tf.Session()\n"
                                  "p = tf.placeholder(tf.float32)\n",
                                  Facts("3.10.0", "2.5.0"), "py")
                  .ok());
  // No TensorFlow, or a script that does not compile: said with the versions found.
  s = CheckScriptRunnable("t.py", "import tensorflow\n", Facts("3.11.7", ""), "py");
  EXPECT_NE(s.message().find("needs TensorFlow"), std::string::npos);
  PythonFacts bad = Facts("3.11.7", "2.21.0");
  bad.syntax_error = "line 3: Missing parentheses in call to 'print'";
  s = CheckScriptRunnable("t.py", "print 'x'\n", bad, "py");
  EXPECT_NE(s.message().find("t.py: line 3: Missing parentheses"), std::string::npos);
  EXPECT_NE(s.message().find("may be Python 2"), std::string::npos);
}

data::ColumnConfig Column(int num, const std::string& name, data::ColumnFlag flag) {
  data::ColumnConfig c;
  c.column_num = num;
  c.column_name = name;
  c.column_flag = flag;
  return c;
}

TEST(ShifuTensorflow, TextDataFromShardsIsShifusLayout) {
  TempDir dir;
  ModelSet ms;
  ms.dir = dir.path();
  ASSERT_TRUE(MakeDirs(ms.NormalizedDataDir()).ok());
  // Columns: id (meta), target, a (feature), color (one-hot, 2 slots), w (weight), unused.
  std::vector<data::ColumnConfig> columns = {Column(0, "id", data::ColumnFlag::kMeta),
                                             Column(1, "label", data::ColumnFlag::kTarget),
                                             Column(2, "a", data::ColumnFlag::kCandidate),
                                             Column(3, "color", data::ColumnFlag::kCandidate),
                                             Column(4, "w", data::ColumnFlag::kWeight),
                                             Column(5, "x", data::ColumnFlag::kNone)};
  data::ShardSchema schema;
  schema.features = {{"a", 2, 1, {}, 0}, {"color", 3, 2, {}, 0}};
  schema.target_name = "label";
  schema.norm_type = "ZSCALE_ONEHOT";
  for (int s = 0; s < 2; ++s) {
    auto w = data::ShardWriter::Create(
        JoinPath(ms.NormalizedDataDir(), "part-0000" + std::to_string(s) + ".tshard"), schema);
    ASSERT_TRUE(w.ok()) << w.status().message();
    // features (a, color0, color1), target, weight
    const float rows[] = {0.5f, 1, 0, 1, 2.5f, -1.25f, 0, 1, 0, 1};
    ASSERT_TRUE(w->Append(rows, 2).ok());
    ASSERT_TRUE(w->Finish().ok());
  }
  const std::string out_dir = dir.File("tmp/shifu-tensorflow/NormalizedData");
  auto data = PrepareShifuTextData(ms, columns, out_dir);
  ASSERT_TRUE(data.ok()) << data.status().message();
  EXPECT_TRUE(data->converted);
  EXPECT_EQ(data->rows, 4u);
  ASSERT_EQ(data->parts.size(), 2u);
  EXPECT_EQ(data->parts[0], JoinPath(out_dir, "part-00000.gz"));
  auto reader = data::ChunkReader::Open(data->parts[1], size_t{1} << 20);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_TRUE((*reader)->gzip());
  data::TextChunk chunk;
  std::string plain;
  while (*(*reader)->Next(&chunk)) plain += chunk.text;
  // One field per column in ColumnConfig order, then the weight; meta and weight columns
  // are not in the shards and stay empty, as every column the shards do not hold.
  EXPECT_EQ(plain, "|1|0.5|1,0|||2.5\n|0|-1.25|0,1|||1\n");
  // tarn's own shards are left as they are.
  EXPECT_TRUE(PathExists(JoinPath(ms.NormalizedDataDir(), "part-00000.tshard")));

  // norm -format text's parts are used as they are.
  TempDir text_dir;
  ModelSet text_ms;
  text_ms.dir = text_dir.path();
  text_dir.Write("tmp/NormalizedData/part-00000.gz", testing::Gzip("1|a||2\n0|b||1\n"));
  text_dir.Write("tmp/NormalizedData/.pig_header", "label|a|w\n");
  data = PrepareShifuTextData(text_ms, columns, text_dir.File("out"));
  ASSERT_TRUE(data.ok()) << data.status().message();
  EXPECT_FALSE(data->converted);
  EXPECT_EQ(data->rows, 2u);
  ASSERT_EQ(data->parts.size(), 1u);
  EXPECT_EQ(data->parts[0], text_dir.File("tmp/NormalizedData/part-00000.gz"));

  TempDir empty;
  ModelSet none;
  none.dir = empty.path();
  auto missing = PrepareShifuTextData(none, columns, empty.File("out"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("run 'tarn norm' first"), std::string::npos);
}

TEST(ShifuTensorflow, WorkersGetWholeFilesRoundRobin) {
  auto lists = SplitPartsAcrossWorkers({"p0", "p1", "p2", "p3", "p4"}, 2);
  ASSERT_TRUE(lists.ok());
  EXPECT_EQ(*lists, (std::vector<std::string>{"p0,p2,p4", "p1,p3"}));
  auto few = SplitPartsAcrossWorkers({"p0"}, 2);
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("2 workers but 1 normalized data files"),
            std::string::npos);
}

TEST(ShifuTensorflow, TheServiceHasShifusRoles) {
  ShifuScriptJob job;
  job.script = "/ms/distributed_tf_keras.py";
  job.python = "/venv/bin/python";
  job.model_set = "/ms";
  job.ps = 2;
  job.workers = 3;
  job.backups = 1;
  job.data_lists_dir = "/ms/tmp/shifu-tensorflow/worker-data";
  job.env = {{"WORKER_CNT", "3"}, {"DELIMITER", "|"}};
  const assembly::Service s = ShifuScriptService(job, "shifu-tensorflow");
  ASSERT_EQ(s.components.size(), 2u);
  const auto& ps = s.components[0];
  const auto& worker = s.components[1];
  EXPECT_EQ(ps.name, "ps");
  EXPECT_EQ(*ps.number_of_containers, 2);
  EXPECT_EQ(worker.name, "worker");
  EXPECT_EQ(*worker.number_of_containers, 3);
  EXPECT_EQ(worker.configuration.properties.at("tarn.backups"), "1");
  EXPECT_EQ(ps.configuration.properties.count("tarn.backups"), 0u);
  for (const auto* c : {&ps, &worker}) {
    EXPECT_EQ(c->restart_policy, assembly::RestartPolicy::kNever);
    EXPECT_EQ(c->configuration.properties.at("tarn.tf.role"), c->name);
    EXPECT_EQ(c->configuration.env.at("WORKER_CNT"), "3");
    EXPECT_NE(c->launch_command.find("cp '/ms/ModelConfig.json' '/ms/ColumnConfig.json' ."),
              std::string::npos);
    EXPECT_NE(c->launch_command.find("export TASK_ID=\"$TASK_INDEX\""), std::string::npos);
    EXPECT_NE(c->launch_command.find("exec '/venv/bin/python' '/ms/distributed_tf_keras.py'"),
              std::string::npos);
  }
  EXPECT_EQ(ps.launch_command.find("TRAINING_DATA_PATH"), std::string::npos);
  EXPECT_NE(worker.launch_command.find(
                "TRAINING_DATA_PATH=\"$(cat '/ms/tmp/shifu-tensorflow/worker-data'/worker-\""
                "$TASK_INDEX\".data)\""),
            std::string::npos)
      << worker.launch_command;
}

TEST(ShifuTensorflow, TheYarnfileStagesFilesAndDataThroughHdfs) {
  ShifuScriptJob job;
  job.script = "/ms/distributed_tf_keras.py";
  job.python = "/venv/bin/python";
  job.ps = 1;
  job.workers = 2;
  job.backups = 1;
  job.job_dir = "hdfs://nn:8020/user/u/.tarn/staging/shifu-tensorflow-1";
  job.worker_data = {job.job_dir + "/data/part-00000.gz", job.job_dir + "/data/part-00001.gz"};
  job.ps_memory_mb = 512;
  job.worker_memory_mb = 1024;
  job.worker_vcores = 2;
  job.env = {{"WORKER_CNT", "2"}, {"TRAIN_SCRIPT_PATH", "resources/distributed_tf_keras.py"}};
  const std::string text = ShifuScriptYarnfile(job, "shifu-tensorflow");
  auto parsed = assembly::ParseService(text, "spec.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << text;
  const assembly::Service& s = *parsed;
  ASSERT_EQ(s.components.size(), 2u);
  const auto& ps = s.components[0];
  const auto& worker = s.components[1];
  EXPECT_EQ(ps.name, "ps");
  EXPECT_EQ(*ps.number_of_containers, 1);
  EXPECT_EQ(*ps.resource->memory_mb, 512);
  EXPECT_EQ(*worker.number_of_containers, 2);
  EXPECT_EQ(*worker.resource->memory_mb, 1024);
  EXPECT_EQ(*worker.resource->cpus, 2);
  EXPECT_EQ(worker.configuration.properties.at("tarn.backups"), "1");
  EXPECT_EQ(worker.configuration.env.at("TARN_SHIFU_DATA_1"), job.worker_data[1]);
  // One takeover per backup: more worker failures fail the job.
  EXPECT_EQ(
      worker.configuration.properties.at("yarn.service.container-failure-per-component.threshold"),
      "1");
  EXPECT_EQ(ps.configuration.env.count("TARN_SHIFU_DATA_0"), 0u);
  for (const auto* c : {&ps, &worker}) {
    EXPECT_EQ(c->restart_policy, assembly::RestartPolicy::kNever);
    EXPECT_EQ(c->configuration.properties.at("tarn.tf.role"), c->name);
    std::set<std::string> files;
    for (const auto& f : c->configuration.files) {
      EXPECT_EQ(f.type, assembly::ConfigFileType::kStatic);
      EXPECT_EQ(f.src_file, job.job_dir + "/files/" + f.dest_file);
      files.insert(f.dest_file);
    }
    EXPECT_EQ(files, (std::set<std::string>{"distributed_tf_keras.py", "ModelConfig.json",
                                            "ColumnConfig.json"}));
    EXPECT_NE(c->launch_command.find("cp resources/ModelConfig.json resources/ColumnConfig.json ."),
              std::string::npos);
    EXPECT_NE(c->launch_command.find("exec ./tarn assembly shifu-task "), std::string::npos);
    EXPECT_NE(c->launch_command.find("-- '/venv/bin/python' 'resources/distributed_tf_keras.py'"),
              std::string::npos)
        << c->launch_command;
  }
  // Only the workers upload: the chief's model goes to the job's model/.
  EXPECT_EQ(ps.launch_command.find("--model-out"), std::string::npos);
  EXPECT_NE(worker.launch_command.find("--model-out '" + job.job_dir + "/model'"),
            std::string::npos);
}

}  // namespace
}  // namespace tarn::pipeline
