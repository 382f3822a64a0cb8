// Exit codes shared by every command (README.md "Exit codes").
#pragma once

namespace kevlaya::runtime {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // could not do the job: bad config, refused plan, state_dir in use
inline constexpr int kExitPartial = 2;  // `run`: some tasks ended in error
inline constexpr int kExitInterrupted = 130;  // a signal stopped unfinished work; a second signal at once

}  // namespace kevlaya::runtime
