#include "output/Records.hpp"

#include <cstddef>

namespace fabscope::output {
namespace {

class CompoundBuilder {
 public:
  explicit CompoundBuilder(std::size_t size) : type_(H5Tcreate(H5T_COMPOUND, size), "H5Tcreate") {}
  CompoundBuilder& field(const char* name, std::size_t offset, hid_t type) {
    checkH5(H5Tinsert(type_.get(), name, offset, type), std::string("H5Tinsert ") + name);
    return *this;
  }
  CompoundBuilder& text(const char* name, std::size_t offset, std::size_t bytes) {
    H5Type s = fixedStringType(bytes);
    return field(name, offset, s.get());
  }
  H5Type take() { return std::move(type_); }

 private:
  H5Type type_;
};

}  // namespace

template <>
H5Type compoundTypeOf<SampleRecord>() {
  return CompoundBuilder(sizeof(SampleRecord))
      .field("rank", offsetof(SampleRecord, rank), H5T_NATIVE_INT32)
      .field("iter", offsetof(SampleRecord, iter), H5T_NATIVE_INT32)
      .field("peer", offsetof(SampleRecord, peer), H5T_NATIVE_INT32)
      .field("bytes", offsetof(SampleRecord, bytes), H5T_NATIVE_INT64)
      .field("t_post_ns", offsetof(SampleRecord, t_post_ns), H5T_NATIVE_INT64)
      .field("t_done_ns", offsetof(SampleRecord, t_done_ns), H5T_NATIVE_INT64)
      .field("flags", offsetof(SampleRecord, flags), H5T_NATIVE_UINT32)
      .field("level", offsetof(SampleRecord, level), H5T_NATIVE_UINT8)
      .take();
}

template <>
H5Type compoundTypeOf<RankRecord>() {
  return CompoundBuilder(sizeof(RankRecord))
      .field("rank", offsetof(RankRecord, rank), H5T_NATIVE_INT32)
      .text("host", offsetof(RankRecord, host), sizeof(RankRecord::host))
      .field("local_rank", offsetof(RankRecord, local_rank), H5T_NATIVE_INT32)
      .field("local_size", offsetof(RankRecord, local_size), H5T_NATIVE_INT32)
      .field("pid", offsetof(RankRecord, pid), H5T_NATIVE_INT32)
      .field("gpu", offsetof(RankRecord, gpu), H5T_NATIVE_INT32)
      .text("nic", offsetof(RankRecord, nic), sizeof(RankRecord::nic))
      .field("clock_offset_ns", offsetof(RankRecord, clock_offset_ns), H5T_NATIVE_INT64)
      .field("clock_uncertainty_ns", offsetof(RankRecord, clock_uncertainty_ns), H5T_NATIVE_INT64)
      .text("site", offsetof(RankRecord, site), sizeof(RankRecord::site))
      .text("pod", offsetof(RankRecord, pod), sizeof(RankRecord::pod))
      .text("leaf", offsetof(RankRecord, leaf), sizeof(RankRecord::leaf))
      .take();
}

template <>
H5Type compoundTypeOf<SummaryRecord>() {
  return CompoundBuilder(sizeof(SummaryRecord))
      .field("rank", offsetof(SummaryRecord, rank), H5T_NATIVE_INT32)
      .field("samples", offsetof(SummaryRecord, samples), H5T_NATIVE_INT64)
      .field("min_ns", offsetof(SummaryRecord, min_ns), H5T_NATIVE_DOUBLE)
      .field("mean_ns", offsetof(SummaryRecord, mean_ns), H5T_NATIVE_DOUBLE)
      .field("p50_ns", offsetof(SummaryRecord, p50_ns), H5T_NATIVE_DOUBLE)
      .field("p99_ns", offsetof(SummaryRecord, p99_ns), H5T_NATIVE_DOUBLE)
      .field("p999_ns", offsetof(SummaryRecord, p999_ns), H5T_NATIVE_DOUBLE)
      .field("max_ns", offsetof(SummaryRecord, max_ns), H5T_NATIVE_DOUBLE)
      .field("bytes", offsetof(SummaryRecord, bytes), H5T_NATIVE_INT64)
      .field("errors", offsetof(SummaryRecord, errors), H5T_NATIVE_INT64)
      .text("scope", offsetof(SummaryRecord, scope), sizeof(SummaryRecord::scope))
      .take();
}

template <>
H5Type compoundTypeOf<ScopeRecord>() {
  return CompoundBuilder(sizeof(ScopeRecord))
      .text("scope", offsetof(ScopeRecord, scope), sizeof(ScopeRecord::scope))
      .text("sites", offsetof(ScopeRecord, sites), sizeof(ScopeRecord::sites))
      .field("crosses_sites", offsetof(ScopeRecord, crosses_sites), H5T_NATIVE_INT32)
      .field("samples", offsetof(ScopeRecord, samples), H5T_NATIVE_INT64)
      .field("min_ns", offsetof(ScopeRecord, min_ns), H5T_NATIVE_DOUBLE)
      .field("mean_ns", offsetof(ScopeRecord, mean_ns), H5T_NATIVE_DOUBLE)
      .field("p50_ns", offsetof(ScopeRecord, p50_ns), H5T_NATIVE_DOUBLE)
      .field("p99_ns", offsetof(ScopeRecord, p99_ns), H5T_NATIVE_DOUBLE)
      .field("p999_ns", offsetof(ScopeRecord, p999_ns), H5T_NATIVE_DOUBLE)
      .field("max_ns", offsetof(ScopeRecord, max_ns), H5T_NATIVE_DOUBLE)
      .field("bytes", offsetof(ScopeRecord, bytes), H5T_NATIVE_INT64)
      .field("gbps_p50", offsetof(ScopeRecord, gbps_p50), H5T_NATIVE_DOUBLE)
      .field("gbps_p99", offsetof(ScopeRecord, gbps_p99), H5T_NATIVE_DOUBLE)
      .field("gbps_mean", offsetof(ScopeRecord, gbps_mean), H5T_NATIVE_DOUBLE)
      .field("impact_mean", offsetof(ScopeRecord, impact_mean), H5T_NATIVE_DOUBLE)
      .field("impact_p99", offsetof(ScopeRecord, impact_p99), H5T_NATIVE_DOUBLE)
      .take();
}

template <>
H5Type compoundTypeOf<EventRecord>() {
  return CompoundBuilder(sizeof(EventRecord))
      .field("rank", offsetof(EventRecord, rank), H5T_NATIVE_INT32)
      .field("t_ns", offsetof(EventRecord, t_ns), H5T_NATIVE_INT64)
      .text("kind", offsetof(EventRecord, kind), sizeof(EventRecord::kind))
      .field("peer", offsetof(EventRecord, peer), H5T_NATIVE_INT32)
      .text("detail", offsetof(EventRecord, detail), sizeof(EventRecord::detail))
      .take();
}

template <>
H5Type compoundTypeOf<CounterRecord>() {
  return CompoundBuilder(sizeof(CounterRecord))
      .field("rank", offsetof(CounterRecord, rank), H5T_NATIVE_INT32)
      .text("source", offsetof(CounterRecord, source), sizeof(CounterRecord::source))
      .text("name", offsetof(CounterRecord, name), sizeof(CounterRecord::name))
      .field("before", offsetof(CounterRecord, before), H5T_NATIVE_INT64)
      .field("after", offsetof(CounterRecord, after), H5T_NATIVE_INT64)
      .field("delta", offsetof(CounterRecord, delta), H5T_NATIVE_INT64)
      .take();
}

template <>
H5Type compoundTypeOf<ValidityRecord>() {
  return CompoundBuilder(sizeof(ValidityRecord))
      .text("host", offsetof(ValidityRecord, host), sizeof(ValidityRecord::host))
      .text("what", offsetof(ValidityRecord, what), sizeof(ValidityRecord::what))
      .field("value", offsetof(ValidityRecord, value), H5T_NATIVE_DOUBLE)
      .field("limit", offsetof(ValidityRecord, limit), H5T_NATIVE_DOUBLE)
      .text("effect", offsetof(ValidityRecord, effect), sizeof(ValidityRecord::effect))
      .take();
}

template <>
H5Type compoundTypeOf<KeyValueRecord>() {
  return CompoundBuilder(sizeof(KeyValueRecord))
      .text("key", offsetof(KeyValueRecord, key), sizeof(KeyValueRecord::key))
      .text("value", offsetof(KeyValueRecord, value), sizeof(KeyValueRecord::value))
      .take();
}

template <>
H5Type compoundTypeOf<ConsistencyRecord>() {
  return CompoundBuilder(sizeof(ConsistencyRecord))
      .text("severity", offsetof(ConsistencyRecord, severity), sizeof(ConsistencyRecord::severity))
      .text("host", offsetof(ConsistencyRecord, host), sizeof(ConsistencyRecord::host))
      .text("component", offsetof(ConsistencyRecord, component), sizeof(ConsistencyRecord::component))
      .text("what", offsetof(ConsistencyRecord, what), sizeof(ConsistencyRecord::what))
      .text("expected", offsetof(ConsistencyRecord, expected), sizeof(ConsistencyRecord::expected))
      .text("found", offsetof(ConsistencyRecord, found), sizeof(ConsistencyRecord::found))
      .take();
}

template <>
H5Type compoundTypeOf<ManifestRecord>() {
  return CompoundBuilder(sizeof(ManifestRecord))
      .text("component", offsetof(ManifestRecord, component), sizeof(ManifestRecord::component))
      .text("host", offsetof(ManifestRecord, host), sizeof(ManifestRecord::host))
      .text("intended", offsetof(ManifestRecord, intended), sizeof(ManifestRecord::intended))
      .text("discovered", offsetof(ManifestRecord, discovered), sizeof(ManifestRecord::discovered))
      .text("status", offsetof(ManifestRecord, status), sizeof(ManifestRecord::status))
      .field("must_match", offsetof(ManifestRecord, must_match), H5T_NATIVE_INT32)
      .text("validation", offsetof(ManifestRecord, validation), sizeof(ManifestRecord::validation))
      .take();
}

}  // namespace fabscope::output
