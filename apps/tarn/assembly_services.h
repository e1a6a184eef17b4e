// tarn assembly validate, and tarn assembly ... --via services (YARN's own service framework).
// The `tarn assembly` dispatch (apps/tarn/assembly_command.cpp) calls these.
#pragma once

#include <string>
#include <vector>

namespace tarn::app {

// tarn assembly validate FILE [--json]; `args` are the words after "validate". Prints what
// tarn will run, or the first error with the field's path (exit 2).
int RunAssemblyValidate(const std::vector<std::string>& args);

// tarn assembly launch|status|flex|stop|start|destroy ... --via services; `args` are the words
// after "assembly" (the subcommand first; "--via services" anywhere).
int RunAssemblyViaServices(const std::vector<std::string>& args);

}  // namespace tarn::app
