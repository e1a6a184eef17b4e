// Commands of the `tarn` binary that parse their own arguments (main.cpp
// dispatches to them by name). Each returns the process exit status.
#pragma once

namespace tarn::app {

// tarn serve ...: argv[1] is "serve". See apps/tarn/serve_command.cpp.
int RunServeCommand(int argc, char** argv);

// tarn node ...: one process of a distributed job. See apps/tarn/node_command.cpp.
int RunNodeCommand(int argc, char** argv);

// tarn yarn am-selftest ...: a minimal ApplicationMaster that checks tarn's YARN
// protocol clients on a real cluster. See apps/tarn/yarn_am_command.cpp.
int RunYarnAmSelftest(int argc, char** argv);

// tarn yarn status|kill|logs|list ...: applications on YARN. See apps/tarn/yarn_command.cpp.
int RunYarnCommand(int argc, char** argv);

// tarn keras describe FILE: a Keras model.to_json() as tarn reads it. See
// apps/tarn/keras_command.cpp.
int RunKerasCommand(int argc, char** argv);

// tarn assembly launch|status|flex|stop|start|destroy|list ...: YARN service assembly
// files run on this machine. See apps/tarn/assembly_command.cpp.
int RunAssemblyCommand(int argc, char** argv);

}  // namespace tarn::app
