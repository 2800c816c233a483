// The driver's log lines (see log.h).
#include "runtime/log.h"

#include <atomic>
#include <memory>
#include <mutex>

namespace torch_neuronx {
namespace {

std::atomic<int> g_level{-1};  // -1: no sink yet, nothing is logged
std::mutex& g_mu = *new std::mutex;
std::shared_ptr<LogSink>& g_sink = *new std::shared_ptr<LogSink>;

}  // namespace

bool log_enabled(int level) { return level <= g_level.load(std::memory_order_relaxed); }

void log_message(int level, const char* logger, const std::string& message) {
  if (!log_enabled(level)) return;
  std::shared_ptr<LogSink> sink;
  {
    std::lock_guard<std::mutex> g(g_mu);
    sink = g_sink;
  }
  if (sink && *sink) (*sink)(level, logger, message);
}

void set_log_sink(LogSink sink, int level) {
  std::lock_guard<std::mutex> g(g_mu);
  g_sink = sink ? std::make_shared<LogSink>(std::move(sink)) : nullptr;
  g_level.store(g_sink ? level : -1, std::memory_order_relaxed);
}

}  // namespace torch_neuronx
