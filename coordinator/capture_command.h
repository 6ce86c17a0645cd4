// `dfx-coordinator capture W ...` (README "On demand"): changes what the
// next dispatches of the L3 run going on in work dir W capture, over the
// run's control socket (capture_control.h), or asks how far it is
// (--status). The collector flags are the run-config flags
// (config::ParseRunConfigFlags); `--disable NAME` and `--off` turn
// collectors off; `--ranks LIST` and `--next N` say where and for how long.
//
// Exit status: 0 applied, 1 refused by the run or no run going in W, 2 usage.
#pragma once

#include <string>
#include <vector>

namespace dfx::coordinator {

// `args`: the words after "capture". Prints on stdout / stderr.
int CaptureMain(std::vector<std::string> args);

}  // namespace dfx::coordinator
