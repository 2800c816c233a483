// The driver's log lines, sent to Python's `logging` (torch_neuronx.runtime.log installs the
// sink): TORCH_NEURONX_LOG_LEVEL and TORCH_NEURONX_LOG_FILE then govern C++ and Python alike.
// Callers check log_enabled() before building a message, so a disabled level costs one load.
#pragma once

#include <functional>
#include <string>

namespace torch_neuronx {

// TorchNeuron's levels (TORCH_NEURONX_LOG_LEVEL): 0 ERROR, 1 WARNING, 2 INFO, 3 DEBUG.
enum LogLevel : int { kLogError = 0, kLogWarning = 1, kLogInfo = 2, kLogDebug = 3 };

bool log_enabled(int level);

// `logger` is the Python logger name, e.g. "torch_neuronx.eager".
void log_message(int level, const char* logger, const std::string& message);

// Installs the sink and the highest level it wants (messages above it are not built).
using LogSink =
    std::function<void(int level, const std::string& logger, const std::string& message)>;
void set_log_sink(LogSink sink, int level);

}  // namespace torch_neuronx
