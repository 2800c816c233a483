// The Kineto child activity profiler of the neuron device (see device_trace.h).
//
// PyTorch's Linux wheels are built with Kineto, and torch 2.13 exports
// torch::profiler::impl::PrivateUse1ProfilerRegistry from libtorch_cpu: a backend registers a
// libkineto::IActivityProfiler factory there, Kineto creates one session per profiling cycle,
// forwards every op's correlation id to it and merges the activities it logs into the trace and
// into the events behind key_averages(). The registry and the interface are declared only under
// USE_KINETO, which the wheel defined when it was built.
#ifndef USE_KINETO
#define USE_KINETO
#endif
// GenericTraceActivity::addMetadata formats values with fmt, whose compiled symbols libtorch
// does not export: use fmt header-only in this translation unit.
#ifndef FMT_HEADER_ONLY
#define FMT_HEADER_ONLY
#endif

#include "runtime/device_trace.h"

#include <IActivityProfiler.h>
#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>
#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace torch_neuronx {
namespace {

using libkineto::ActivityType;

// Activity ids start far above PyTorch's op correlation ids (a process-wide counter from 1):
// an id equal to an op's would make the profiler's post-processing treat our host launch
// event as that op.
constexpr int32_t kIdBase = 0x40000000;
// The track (Chrome trace tid) of a device's modeled queue: the model runs one piece of work
// after another per device, so one queue per device.
constexpr int32_t kQueue = 1;
// Beyond this many events per session, further events are counted and reported, not kept.
constexpr size_t kMaxRecords = size_t(4) << 20;

struct Record {
  DeviceWork work;
  int64_t host_start;  // ns, c10::getTime() (Unix time, the profiler's timebase)
  int64_t host_end;
  int64_t device_start;
  uint64_t correlation;  // the ATen op on top of the reporting thread's stack (0: none)
  int32_t pid;
  int32_t tid;
};

// Kineto pushes/pops each recorded op's correlation id on the thread that runs the op.
thread_local std::vector<uint64_t> t_correlation;

std::atomic<bool> g_active{false};
std::atomic<int64_t> g_sessions{0};

// The recording state of the one session that can be active at a time.
struct Recording {
  std::mutex mu;
  std::vector<Record> records;
  std::map<int, int64_t> device_busy_until;  // ns: the end of the device's last event
  int64_t dropped = 0;
};
Recording& recording() {
  static Recording* r = new Recording;  // leaked: ops may still report during shutdown
  return *r;
}

std::mutex& g_callbacks_mu = *new std::mutex;
std::function<void()>& g_on_start = *new std::function<void()>;
std::function<void()>& g_on_stop = *new std::function<void()>;

// Chrome trace strings are written unescaped by Kineto: keep them JSON-safe.
std::string json_safe(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '\'';
  }
  return out;
}

double finite(double v) { return std::isfinite(v) ? v : 0.0; }

// The host-side call that hands the work to the device, named like CUDA's runtime calls.
const char* launch_name(const std::string& kind) {
  if (kind == "copy") return "neuronMemcpy";
  if (kind == "collective") return "neuronLaunchCollective";
  if (kind == "fallback") return "neuronHostFallback";
  return "neuronLaunchKernel";
}

class NeuronTraceSession final : public libkineto::IActivityProfilerSession {
 public:
  explicit NeuronTraceSession(bool enabled) : enabled_(enabled) {}

  void start() override {
    status_ = libkineto::TraceStatus::RECORDING;
    if (!enabled_) return;
    start_ns_ = c10::getTime();
    {
      auto& r = recording();
      std::lock_guard<std::mutex> g(r.mu);
      r.records.clear();
      r.device_busy_until.clear();
      r.dropped = 0;
    }
    g_active.store(true, std::memory_order_release);
    run_callback(/*start=*/true);
  }

  void stop() override {
    status_ = libkineto::TraceStatus::PROCESSING;
    if (!enabled_) return;
    g_active.store(false, std::memory_order_release);
    stop_ns_ = c10::getTime();
    run_callback(/*start=*/false);
    auto& r = recording();
    std::lock_guard<std::mutex> g(r.mu);
    records_.swap(r.records);
    r.records.clear();
    if (r.dropped > 0) {
      errors_.push_back("neuron: " + std::to_string(r.dropped) + " device events beyond " +
                        std::to_string(kMaxRecords) +
                        " per profiling cycle were not recorded; "
                        "profile fewer steps per cycle (torch.profiler.schedule)");
    }
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback linked_activity, int64_t window_start,
                    int64_t window_end) override {
    buffer_.span = libkineto::TraceSpan(start_ns_, stop_ns_, "neuron");
    buffer_.gpuOpCount = -1;
    std::set<int> devices;
    int32_t next_id = kIdBase;
    uint32_t next_flow = 1;
    for (const Record& r : records_) {
      // Keep what the profiler's capture window (the active steps of a schedule) holds.
      if (window_end > window_start && (r.host_start < window_start || r.host_start > window_end)) {
        continue;
      }
      const libkineto::ITraceActivity* op = (r.correlation != 0 && linked_activity)
                                                ? linked_activity(int32_t(r.correlation))
                                                : nullptr;
      const uint32_t flow = next_flow++;

      buffer_.emplace_activity(buffer_.span, ActivityType::PRIVATEUSE1_RUNTIME,
                               launch_name(r.work.kind));
      auto& host = libkineto::CpuTraceBuffer::toRef(buffer_.activities.back());
      host.startTime = r.host_start;
      host.endTime = r.host_end;
      host.device = r.pid;
      host.resource = r.tid;
      host.threadId = r.tid;
      host.id = next_id++;
      host.linked = op;
      host.flow.id = flow;
      host.flow.type = libkineto::kLinkAsyncCpuGpu;
      host.flow.start = 1;
      host.addMetadata("device", r.work.device);

      const bool is_copy = r.work.kind == "copy";
      buffer_.emplace_activity(buffer_.span,
                               is_copy ? ActivityType::GPU_MEMCPY : ActivityType::CONCURRENT_KERNEL,
                               r.work.name);
      auto& dev = libkineto::CpuTraceBuffer::toRef(buffer_.activities.back());
      dev.startTime = r.device_start;
      dev.endTime = r.device_start + r.work.duration_ns;
      dev.device = r.work.device;
      dev.resource = kQueue;
      dev.id = next_id++;
      dev.linked = op;
      dev.flow.id = flow;
      dev.flow.type = libkineto::kLinkAsyncCpuGpu;
      dev.flow.start = 0;
      dev.addMetadata("device", r.work.device);
      dev.addMetadata("correlation", r.correlation);
      dev.addMetadataQuoted("kind", json_safe(r.work.kind));
      dev.addMetadataQuoted("engine", json_safe(r.work.engine));
      dev.addMetadataQuoted("shapes", json_safe(r.work.shapes));
      dev.addMetadataQuoted("dtype", json_safe(r.work.dtype));
      dev.addMetadata("flops", finite(r.work.flops));
      dev.addMetadata("bytes", finite(r.work.bytes));
      if (!r.work.bound.empty()) dev.addMetadataQuoted("bound", json_safe(r.work.bound));
      if (!r.work.detail.empty()) dev.addMetadataQuoted("detail", json_safe(r.work.detail));
      dev.addMetadataQuoted("time", "modeled Trainium time (torch_neuronx.perf)");
      devices.insert(r.work.device);

      host.log(logger);
      dev.log(logger);
    }
    // One process row per neuron device (pid = device index, as for CUDA's GPUs), sorted after
    // the host rows.
    for (int d : devices) {
      logger.handleDeviceInfo(device_info(d), start_ns_);
      logger.handleResourceInfo(libkineto::ResourceInfo{kQueue, kQueue, d, "modeled queue"},
                                start_ns_);
    }
    devices_ = std::move(devices);
  }

  // processTrace announces every device used. Kineto asks for one more after it; answering
  // (with the first device again) stops it from labelling device rows "GPU <n>" after ours.
  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    if (devices_.empty()) return nullptr;
    return std::make_unique<libkineto::DeviceInfo>(device_info(*devices_.begin()));
  }
  std::vector<libkineto::ResourceInfo> getResourceInfos() override { return {}; }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return std::make_unique<libkineto::CpuTraceBuffer>(std::move(buffer_));
  }

  void pushCorrelationId(uint64_t id) override { t_correlation.push_back(id); }
  void popCorrelationId() override {
    if (!t_correlation.empty()) t_correlation.pop_back();
  }

 private:
  static libkineto::DeviceInfo device_info(int d) {
    return libkineto::DeviceInfo{d, libkineto::kExceedMaxPid + d, "neuron:" + std::to_string(d),
                                 "NeuronCore " + std::to_string(d) + " (modeled Trainium time)"};
  }

  void run_callback(bool start) {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> g(g_callbacks_mu);
      fn = start ? g_on_start : g_on_stop;
    }
    if (!fn) return;
    try {
      fn();
    } catch (const std::exception& e) {
      errors_.push_back(std::string("neuron: profiler session ") + (start ? "start" : "stop") +
                        " hook failed: " + e.what());
    }
  }

  bool enabled_;
  int64_t start_ns_ = 0;
  int64_t stop_ns_ = 0;
  std::vector<Record> records_;
  std::set<int> devices_;
  std::vector<std::string> errors_;
  libkineto::CpuTraceBuffer buffer_;
};

class NeuronActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<ActivityType>& activity_types, const libkineto::Config& /*config*/) override {
    g_sessions.fetch_add(1, std::memory_order_relaxed);
    // Device events only when the user asked for the device activity (PyTorch then requests
    // the kernel / memcpy types, as it does for CUDA).
    bool wanted = activity_types.count(ActivityType::CONCURRENT_KERNEL) > 0 ||
                  activity_types.count(ActivityType::GPU_MEMCPY) > 0;
    return std::make_unique<NeuronTraceSession>(wanted);
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t /*ts_ms*/, int64_t /*duration_ms*/, const std::set<ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_{"neuron"};
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                     ActivityType::PRIVATEUSE1_RUNTIME};
};

struct RegisterNeuronActivityProfiler {
  RegisterNeuronActivityProfiler() {
    torch::profiler::impl::PrivateUse1ProfilerRegistry::instance().registerFactory(
        []() -> std::unique_ptr<libkineto::IActivityProfiler> {
          return std::make_unique<NeuronActivityProfiler>();
        });
  }
} g_register_activity_profiler;

}  // namespace

bool device_trace_active() { return g_active.load(std::memory_order_relaxed); }

void record_device_work(const DeviceWork& work) {
  if (!g_active.load(std::memory_order_acquire)) return;
  const int64_t host_start = c10::getTime();
  const uint64_t correlation = t_correlation.empty() ? 0 : t_correlation.back();
  const auto pid = static_cast<int32_t>(libkineto::processId());
  const auto tid = static_cast<int32_t>(libkineto::systemThreadId());
  auto& r = recording();
  std::lock_guard<std::mutex> g(r.mu);
  if (r.records.size() >= kMaxRecords) {
    r.dropped++;
    return;
  }
  int64_t& busy = r.device_busy_until[work.device];
  // The device starts the work when it is launched or when its previous work ends, whichever
  // is later (one queue per device, as the model assumes).
  const int64_t device_start = std::max(host_start, busy);
  const int64_t duration = std::max<int64_t>(work.duration_ns, 0);
  busy = device_start + duration;
  Record rec{work, host_start, c10::getTime(), device_start, correlation, pid, tid};
  rec.work.duration_ns = duration;
  r.records.push_back(std::move(rec));
}

void set_device_trace_callbacks(std::function<void()> on_start, std::function<void()> on_stop) {
  std::lock_guard<std::mutex> g(g_callbacks_mu);
  g_on_start = std::move(on_start);
  g_on_stop = std::move(on_stop);
}

int64_t device_trace_sessions() { return g_sessions.load(std::memory_order_relaxed); }

}  // namespace torch_neuronx
