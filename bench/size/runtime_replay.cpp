// What the runtime's replay costs a firmware in code: the writer, the dependency tracker, the
// replay of a program's intrinsics, the session that checks the model files, loads them, relocates
// and runs streams, instantiated once as a firmware instantiates them (its generated replays
// are the model's code, not the runtime's, and are left out). bench/deploy_sizes.sh compiles
// this file for 32-bit ARM and reports its text size.
#include <dlavm/runtime/replay.hpp>
#include <dlavm/runtime/session.hpp>

#include <cstdint>

namespace rt = dlavm::runtime;

// the generated header's layout, a constant of the code
inline constexpr rt::IsaLayout kLayout = rt::IsaLayout::default_layout();
using WriterLayout = rt::StaticLayout<kLayout>;
using ReplayFn = bool (*)(rt::Replay<rt::SpanStorage, WriterLayout>&, const std::int64_t*);

template class rt::StreamWriter<rt::SpanStorage, WriterLayout>;
template class rt::Replay<rt::SpanStorage, WriterLayout>;
template class rt::Session<rt::VtaDriverApi>;
template rt::ModelStatus rt::Session<rt::VtaDriverApi>::replay<false, WriterLayout, ReplayFn>(
    WriterLayout, ReplayFn, const rt::SramRegion*, std::size_t, const std::uint64_t*,
    std::uint64_t*, std::size_t, const std::int64_t*, const rt::ReplaySlots&);
