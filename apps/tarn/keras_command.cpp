// tarn keras describe FILE: reads the JSON of a Keras model.to_json() as tarn's
// trainer will (src/model/keras_model.h) and prints what it understood, or the
// first thing it refuses, by layer and JSON path.
#include <cstdio>
#include <string>

#include "cli.h"
#include "commands.h"
#include "model/keras_model.h"

namespace tarn::app {
namespace {

constexpr const char* kKerasUsage =
    "usage: tarn keras describe FILE\n"
    "Reads FILE, the JSON of a Keras model.to_json() (Keras 3 or Keras 2, Functional or\n"
    "Sequential), and prints as JSON its inputs and its layers in topological order: class,\n"
    "inbound layers, the config tarn reads, the Keras output shape and the width of the\n"
    "(batch, width) tensor tarn computes. Exits 2 naming the layer and the JSON path of the\n"
    "first thing tarn cannot train (docs/TRAINING.md lists what is read).\n";

}  // namespace

int RunKerasCommand(int argc, char** argv) {
  if (argc == 3 && (std::string(argv[2]) == "-h" || std::string(argv[2]) == "--help")) {
    std::fputs(kKerasUsage, stdout);
    return 0;
  }
  if (argc != 4 || std::string(argv[2]) != "describe") {
    std::fprintf(stderr, "tarn keras: expected 'describe FILE'\n%s", kKerasUsage);
    return kExitUsage;
  }
  auto model = model::ReadKerasModel(argv[3]);
  if (!model.ok()) return Fail("tarn keras", model.status());
  auto widths = model::KerasGraphWidths(*model);
  if (!widths.ok()) return Fail("tarn keras", widths.status());
  std::printf("%s\n", model->Describe(*widths).dump(2).c_str());
  return 0;
}

}  // namespace tarn::app
