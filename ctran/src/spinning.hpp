// How a wait on a peer spins: for how long before it sleeps, and what it does when it finds
// that it shares its core with another runnable thread.
//
// Spinning is what makes a wait between ranks fast: a rank that sleeps is woken by its peer
// through the kernel, and waking a core that went idle costs tens of microseconds (more under
// a hypervisor), far more than a small collective takes. But a spinning rank holds its core.
// While the machine has a core for every runnable thread that costs nothing; once it has more
// runnable threads than cores (ranks outnumbering cores, or any other load), the peer a rank
// spins for may be waiting for that very core, and each wait then lasts about its whole spin
// before anything moves. So a wait spins RCCLX_SPIN_US while the machine has a core to spare
// and RCCLX_SPIN_BUSY_US while it has not. Whether it has is looked at when a spin runs out
// (the only time it matters), at most once per millisecond per process, from the kernel's
// count of runnable threads.
//
// A spin also yields its core early on (yieldCore). When the yield lets another thread run
// (it returns late), something shares this rank's core, typically its peer: the scheduler puts
// a thread woken by another on the waker's core, so after any blocking exchange (a Gloo call,
// a socket, a queue) two ranks may end up on one core while another core idles, and then each
// waits for the other to be scheduled, 5-10x slower, until the kernel's load balancer
// separates them, which can take many milliseconds. If the machine has a core to spare, the
// rank moves itself off its core (it takes that core out of its affinity mask and puts the
// mask back at once), on a coin toss so that the two do not both move, and tries at most once
// per 100 us per process; RCCLX_LEAVE_SHARED_CORE=0 turns that off.
#pragma once

#include <cstdint>

namespace ctran {

/// Microseconds the wait about to start may spin.
int64_t spinBudgetUs();

/// Called by a wait whose spin ran out: looks whether the machine has more runnable threads
/// than cores (rate-limited), which sets the budget of the waits that follow.
void spinRanOut();

/// sched_yield() for a spinning wait: when the yield ran another thread, see above.
void yieldCore();

}  // namespace ctran
