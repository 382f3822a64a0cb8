// What every process the orchestrator starts gets in the forked child before exec (a Boost.Process
// handler, for supervisor/*.cpp only: Process stays out of the domain headers).
#pragma once
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <boost/process/extend.hpp>

#include "common/fd.hpp"

namespace kevlaya::supervisor {

// Own process group (signals reach the whole tree; a timeout kills what it started too), SIGKILL
// when the spawning thread dies (a SIGKILLed orchestrator leaves nothing behind), and only
// stdin/stdout/stderr inherited: the door's listener, its clients' connections, other children's
// pipes and log files stay the door's (docs/security.md, "Descriptors").
struct SpawnSetup : boost::process::extend::handler {
  pid_t parent = ::getpid();
  template <class Exec>
  void on_exec_setup(Exec&) const {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // parent died before prctl took effect
    cloexec_above_stdio();
  }
};

}  // namespace kevlaya::supervisor
