#include "eager/op_table.h"

#include "eager/plan_key.h"

#include "runtime/log.h"

#include "runtime/sync.h"

#include <ATen/core/enum_tag.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace torch_neuronx {
namespace {

// Driver globals are leaked on purpose: ops can still run while the interpreter shuts down.
std::mutex& g_mu = *new std::mutex;
auto& g_entries = *new std::unordered_map<const c10::FunctionSchema*, std::unique_ptr<OpEntry>>;
auto& g_policy = *new std::unordered_map<std::string, OpFacts>;
std::atomic<bool> g_strict{false};

struct Counter {
  std::atomic<int64_t> v{0};
};
std::mutex& g_counter_mu = *new std::mutex;
std::map<std::string, std::unique_ptr<Counter>>& counter_map() {
  static auto& m = *new std::map<std::string, std::unique_ptr<Counter>>;
  return m;
}
Counter& counter(const std::string& name) {
  std::lock_guard<std::mutex> g(g_counter_mu);
  auto& p = counter_map()[name];
  if (!p) p = std::make_unique<Counter>();
  return *p;
}

// The facts of `e` from the pushed table (caller holds g_mu): an entry for the overload wins
// over one for the op; ops the table does not name are native, with no other fact set.
void apply_policy(OpEntry& e) {
  auto p = e.overload.empty() ? g_policy.end() : g_policy.find(e.name + "." + e.overload);
  if (p == g_policy.end()) p = g_policy.find(e.name);
  e.facts = p == g_policy.end() ? OpFacts{} : p->second;
}

OpEntry& op_entry_slow(const c10::OperatorHandle& op) {
  const c10::FunctionSchema* key = &op.schema();
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_entries.find(key);
  if (C10_LIKELY(it != g_entries.end())) return *it->second;
  auto e = std::make_unique<OpEntry>();
  const auto& schema = op.schema();
  e->name = schema.operator_name().name;
  e->overload = schema.overload_name();
  apply_policy(*e);
  e->random = op.hasTag(at::Tag::nondeterministic_seeded);
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].type()->kind() == c10::TypeKind::OptionalType &&
        args[i].type()->castRaw<c10::OptionalType>()->getElementType()->kind() ==
            c10::TypeKind::GeneratorType)
      e->generator_arg = int(i);
  }
  auto& ref = *e;
  g_entries.emplace(key, std::move(e));
  return ref;
}

}  // namespace

OpEntry& op_entry(const c10::OperatorHandle& op) {
  const c10::FunctionSchema* key = &op.schema();
  // Entries live for the whole process, so each thread can cache the lookup without a lock.
  thread_local std::unordered_map<const c10::FunctionSchema*, OpEntry*> t_cache;
  auto hit = t_cache.find(key);
  if (C10_LIKELY(hit != t_cache.end())) return *hit->second;
  OpEntry& e = op_entry_slow(op);
  t_cache.emplace(key, &e);
  return e;
}

void set_op_policy(const std::vector<PolicyRow>& table) {
  std::lock_guard<std::mutex> g(g_mu);
  g_policy.clear();
  for (auto& [name, status, reason, mixed_device_ok, data_movement] : table) {
    g_policy[name] = {static_cast<OpStatus>(status), reason, mixed_device_ok, data_movement};
  }
  for (auto& [k, e] : g_entries) apply_policy(*e);
}

namespace {
thread_local int t_tracking_paused = 0;
}  // namespace
PauseTracking::PauseTracking() { ++t_tracking_paused; }
PauseTracking::~PauseTracking() { --t_tracking_paused; }
bool tracking_paused() { return t_tracking_paused > 0; }

void set_strict(bool s) { g_strict.store(s); }
bool strict() { return g_strict.load(std::memory_order_relaxed); }

std::vector<std::string> executed_ops() {
  std::lock_guard<std::mutex> g(g_mu);
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (auto& [k, e] : g_entries)
    if (e->executed.load() && seen.insert(e->name).second) out.push_back(e->name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> fallback_ops() {
  std::lock_guard<std::mutex> g(g_mu);
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (auto& [k, e] : g_entries)
    if (e->fell_back.load() && seen.insert(e->name).second) out.push_back(e->name);
  std::sort(out.begin(), out.end());
  return out;
}

void clear_op_tracking() {
  std::lock_guard<std::mutex> g(g_mu);
  for (auto& [k, e] : g_entries) {
    e->executed.store(false);
    e->fell_back.store(false);
  }
}

// ---- kernel plan cache ----

uint64_t plan_key::ivalue(uint64_t h, const c10::IValue& v) {
  if (v.isTensor()) return tensor(h, v.toTensor());
  if (v.isInt()) return mix(h, uint64_t(v.toInt()));
  if (v.isDouble()) {
    double d = v.toDouble();
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    return mix(h, bits);
  }
  if (v.isBool()) return mix(h, v.toBool() ? 11 : 13);
  if (v.isNone()) return mix(h, 17);
  if (v.isIntList()) {
    for (auto x : v.toIntList()) h = mix(h, uint64_t(x));
    return mix(h, 19);
  }
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) h = tensor(h, t);
    return mix(h, 23);
  }
  if (v.isString()) return mix(h, std::hash<std::string>()(v.toStringRef()));
  if (v.isScalar()) return mix(h, uint64_t(v.toScalar().type()) + 29);
  return mix(h, uint64_t(v.tagKind().size()));
}

namespace {

struct PlanCache {
  std::mutex mu;
  std::unordered_map<uint64_t, Plan> plans;
  size_t max_entries = 0;  // 0: unbounded
};
PlanCache& plan_cache() {
  static PlanCache& c = *new PlanCache;
  return c;
}

// Each thread remembers the plans it found most recently, so that a repeated signature skips
// the cache's lock and hash-table probe (the cost of a hit matters per op on the eager path).
// A remembered plan is valid while the cache's generation is the one it was found in: emptying
// the cache starts a new generation. A remembered hit counts as a hit, as the lookup would.
std::atomic<uint64_t> g_plan_generation{1};
struct RememberedPlan {
  uint64_t key = 0;
  uint64_t generation = 0;  // 0: empty slot
  Plan plan;
};
constexpr size_t kRemembered = 64;  // slots per thread, by the key's low bits
thread_local RememberedPlan t_remembered[kRemembered];

Counter& c_hits = counter("CompilationCache.InMemoryHits");
Counter& c_misses = counter("CompilationCache.InMemoryMisses");
Counter& c_compile_ns = counter("CompilationCache.CompileTimeNs");
Counter& c_evictions = counter("CompilationCache.Evictions");

void count_hit() {
  if (C10_LIKELY(!t_tracking_paused)) c_hits.v.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

Plan plan_for(OpEntry& e, const c10::OperatorHandle& op, const torch::jit::Stack& stack,
              size_t nargs) {
  return plan_for_args(e, op, stack.data() + (stack.size() - nargs), nargs);
}

Plan plan_for_args(OpEntry& e, const c10::OperatorHandle& op, const c10::IValue* args,
                   size_t nargs) {
  uint64_t key = plan_key::start(op);
  for (size_t i = 0; i < nargs; ++i) key = plan_key::ivalue(key, args[i]);
  if (const Plan* p = cached_plan(key)) return *p;
  return build_plan(e, op, key, args, nargs);
}

const Plan* cached_plan(uint64_t key) {
  RememberedPlan& r = t_remembered[key % kRemembered];
  const uint64_t generation = g_plan_generation.load(std::memory_order_acquire);
  if (r.key == key && r.generation == generation) {
    count_hit();
    return &r.plan;
  }
  auto& c = plan_cache();
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.plans.find(key);
  if (it == c.plans.end()) return nullptr;
  // `generation` was read before the lock: if the cache was emptied since, the slot is
  // already stale and only costs a lookup next time.
  r = RememberedPlan{key, generation, it->second};
  count_hit();
  return &r.plan;
}

Plan build_plan(OpEntry& e, const c10::OperatorHandle& op, uint64_t h, const c10::IValue* args,
                size_t nargs) {
  auto& c = plan_cache();
  // Miss: "compile" the op for this signature, i.e. decide how it runs on the emulated core.
  auto t0 = std::chrono::steady_clock::now();
  Plan plan;
  // 64-bit floating arithmetic gets float32 precision (csrc/eager/kernel.cpp). Not for ops that
  // only move bits or return views, not for random ops (they draw float64 values directly:
  // uniform_ bounds beyond float32's range stay finite), and not under an explicit
  // dtype=float64/complex128 argument, which asks the kernel for 64-bit accumulation.
  bool explicit_wide = false;
  const auto& sargs = op.schema().arguments();
  for (size_t i = 0; i < nargs; ++i) {
    const auto& v = args[i];
    if (v.isInt() && sargs[i].name() == "dtype" &&
        (v.toInt() == int64_t(at::kDouble) || v.toInt() == int64_t(at::kComplexDouble)))
      explicit_wide = true;
  }
  bool returns_view = false;
  for (const auto& r : op.schema().returns())
    if (r.alias_info() && !r.alias_info()->isWrite()) returns_view = true;
  auto wide = [](const at::Tensor& t) {
    return t.defined() &&
           (t.scalar_type() == at::kDouble || t.scalar_type() == at::kComplexDouble) &&
           (t.device().type() == c10::DeviceType::PrivateUse1 || t.dim() == 0);
  };
  if (!e.facts.data_movement && !e.random && !explicit_wide && !returns_view) {
    for (size_t i = 0; i < nargs; ++i) {
      const auto& v = args[i];
      if (v.isTensor() && wide(v.toTensor())) plan.round_f32 = true;
      if (v.isTensorList())
        for (const at::Tensor& t : v.toTensorList())
          if (wide(t)) plan.round_f32 = true;
    }
  }
  auto dt = std::chrono::steady_clock::now() - t0;
  if (log_enabled(kLogDebug)) {
    log_message(
        kLogDebug, "torch_neuronx.eager",
        "compiled a kernel plan for " + e.name +
            (plan.round_f32 ? " (64-bit floats at float32 precision)" : "") + " in " +
            std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(dt).count()) +
            " us");
  }
  if (!t_tracking_paused) c_misses.v.fetch_add(1, std::memory_order_relaxed);
  c_compile_ns.v.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(dt).count(),
                           std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(c.mu);
  if (c.max_entries && c.plans.size() >= c.max_entries) {
    c_evictions.v.fetch_add(int64_t(c.plans.size()));
    c.plans.clear();
    g_plan_generation.fetch_add(1, std::memory_order_release);
  }
  return c.plans.emplace(h, plan).first->second;
}

void set_plan_cache_max_entries(size_t n) {
  auto& c = plan_cache();
  std::lock_guard<std::mutex> g(c.mu);
  c.max_entries = n;
}

std::map<std::string, int64_t> counters() {
  std::lock_guard<std::mutex> g(g_counter_mu);
  std::map<std::string, int64_t> out;
  for (auto& [k, c] : counter_map()) out[k] = c->v.load();
  out["Runtime.HostReadSyncs"] = host_read_syncs().load();
  {
    auto& c = plan_cache();
    std::lock_guard<std::mutex> g2(c.mu);
    out["CompilationCache.Entries"] = int64_t(c.plans.size());
  }
  return out;
}

void clear_counters() {
  std::lock_guard<std::mutex> g(g_counter_mu);
  for (auto& [k, c] : counter_map()) c->v.store(0);
  host_read_syncs().store(0);
}

void bump(const char* name, int64_t by) { counter(name).v.fetch_add(by); }

}  // namespace torch_neuronx
