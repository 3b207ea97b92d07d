"""One SimGrid actor that steps every measuring process of a run (simulate.py's World):
the processes are Python generators that yield what they wait for, so SimGrid switches
contexts by swapping stacks instead of a system thread per actor."""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Dict, List, Optional, Tuple


class Scheduler:
    """The measuring processes of a run, stepped by one SimGrid actor.

    A process is a generator; it yields what it waits for and gets the answer back:
      ("sleep", dt)              resumes dt later (at once when dt <= 0)
      ("until", t)               resumes at simulated time t (at once when past)
      ("send", src, dst, size, shortest, fastest)  a message between two SimGrid hosts,
                                 started now, that cannot take less than `shortest` seconds
                                 nor move faster than `fastest` B/s; resumes True when it
                                 arrived, False when a link of its route was down (SimGrid's
                                 NetworkFailureException)
      ("send after", dt, src, dst, size, shortest, fastest)  the same message dt later
      ("all", [(src, dst, size, shortest, fastest), ...])  messages started together;
                                 resumes when all ended
      ("join", [process, ...])   resumes when those processes have ended
    Every message is a SimGrid communication (Comm.sendto_async) timed by the network model
    and every wait a SimGrid wait, so SimGrid times everything as it would with one actor a
    process; only the context switches between actors are gone. One actor is also what lets
    SimGrid switch contexts by swapping stacks (contexts/factory:raw): with several actors
    running Python, swapped stacks corrupt the interpreter's frame stack, so the Python
    binding defaults to a system thread per actor, which costs far more per wait.

    SimGrid's wait_any costs in the number of communications it is given, so a message
    joins the waited set only from the earliest time it can end (its route's latency plus
    its size at its route's least nominal bandwidth: sharing and drift only slow it), when
    that comes before the next timer; a wait never lasts past the next timer, so no message
    ends unwatched. A message slowed by sharing stays watched past that time, so when the
    watched set has doubled since it was last pruned, each watched message's bound is
    renewed from what it has left to send (at its route's least nominal bandwidth) and
    those that cannot end soon leave it. While a link is down every message is watched (a
    failure can come at any time); `watch_all` says so.
    """

    # a message is watched from this share of its shortest time, less SimGrid's timing
    # precision (precision/timing, 1 ns: events that close are one step) twice over
    EARLIEST_SHARE = 0.999
    TIMING_PRECISION_S = 1e-9

    def __init__(self, sg):
        self.sg = sg
        # heap of (time, order, process or (process, message to start then))
        self.timers: List[Tuple[float, int, object]] = []
        self.order = 0
        self.ready: deque = deque()                         # (process, value to send it)
        self.comms: List[object] = []                       # watched SimGrid comms
        # per watched comm: (process, its group, the fastest it can move in B/s)
        self.owners: List[Tuple[object, Optional[list], float]] = []
        self.later: List[tuple] = []   # heap of (earliest end, order, comm, process, group, fastest)
        self.pruned_at = 0             # watched messages left after the last pruning
        self.watch_all = 0
        self.now = 0.0   # SimGrid's clock, read after each wait (only a wait moves it)
        self.ended: set = set()
        self.joiners: Dict[object, List[list]] = {}

    def spawn(self, process):
        self.ready.append((process, None))
        return process

    def _start(self, process, src, dst, size: int, shortest: float, fastest: float, group) -> bool:
        try:
            comm = self.sg.Comm.sendto_async(src, dst, size)
        except self.sg.NetworkFailureException:
            return False
        if self.watch_all:
            self.comms.append(comm)
            self.owners.append((process, group, fastest))
        else:
            earliest = self.now + self.EARLIEST_SHARE * shortest - 2 * self.TIMING_PRECISION_S
            heapq.heappush(self.later, (earliest, self.order, comm, process, group, fastest))
            self.order += 1
        return True

    def _step(self, process, value) -> None:
        try:
            request = process.send(value)
        except StopIteration:
            self.ended.add(process)
            for waiting in self.joiners.pop(process, ()):
                waiting[0] -= 1
                if waiting[0] == 0:
                    self.ready.append((waiting[1], None))
            return
        what = request[0]
        if what == "send":
            if not self._start(process, *request[1:], None):
                self.ready.append((process, False))
        elif what == "send after":
            if request[1] > 0:
                heapq.heappush(self.timers, (self.now + request[1], self.order, (process, request[2:])))
                self.order += 1
            elif not self._start(process, *request[2:], None):
                self.ready.append((process, False))
        elif what == "sleep":
            if request[1] > 0:
                heapq.heappush(self.timers, (self.now + request[1], self.order, process))
                self.order += 1
            else:
                self.ready.append((process, None))
        elif what == "until":
            if request[1] > self.now:
                heapq.heappush(self.timers, (request[1], self.order, process))
                self.order += 1
            else:
                self.ready.append((process, None))
        elif what == "all":
            group = [0, process]
            for message in request[1]:
                group[0] += self._start(process, *message, group)
            if group[0] == 0:
                self.ready.append((process, None))
        elif what == "join":
            waiting = [0, process]
            for other in request[1]:
                if other not in self.ended:
                    waiting[0] += 1
                    self.joiners.setdefault(other, []).append(waiting)
            if waiting[0] == 0:
                self.ready.append((process, None))
        else:
            raise ValueError(f"a process asked for {what!r}")

    def _finished(self, index: int, arrived: bool) -> None:
        # swap-remove: the list's order is only the order wait_any looks at
        last = len(self.comms) - 1
        process, group, _ = self.owners[index]
        self.comms[index], self.owners[index] = self.comms[last], self.owners[last]
        self.comms.pop()
        self.owners.pop()
        if group is None:
            self.ready.append((process, arrived))
        else:
            group[0] -= 1
            if group[0] == 0:
                self.ready.append((process, None))

    def _watch(self, until: float) -> None:
        """Watch the messages that can end by `until`."""
        later = self.later
        while later and later[0][0] <= until:
            _, _, comm, process, group, fastest = heapq.heappop(later)
            self.comms.append(comm)
            self.owners.append((process, group, fastest))

    def _prune(self) -> None:
        """Renew each watched message's earliest end from what it has left to send; those
        that cannot end before the next timer go back to wait for it."""
        horizon = self.timers[0][0] if self.timers else math.inf
        comms, owners = self.comms, self.owners
        keep = 0
        for i in range(len(comms)):
            comm, (process, group, fastest) = comms[i], owners[i]
            earliest = self.now + self.EARLIEST_SHARE * comm.remaining / fastest \
                - 2 * self.TIMING_PRECISION_S
            if earliest > horizon:
                heapq.heappush(self.later, (earliest, self.order, comm, process, group, fastest))
                self.order += 1
            else:
                comms[keep], owners[keep] = comm, owners[i]
                keep += 1
        del comms[keep:], owners[keep:]
        self.pruned_at = keep

    def _wake_timers(self) -> None:
        """Resume the processes whose time has come: the first timer's (the one waited for,
        which SimGrid's clock may reach to within a rounding) and any at or before it."""
        due = max(self.timers[0][0], self.now)
        while self.timers and self.timers[0][0] <= due:
            waiting = heapq.heappop(self.timers)[2]
            if type(waiting) is tuple:   # a message to start: the process waits for its end
                if not self._start(waiting[0], *waiting[1], None):
                    self.ready.append((waiting[0], False))
            else:
                self.ready.append((waiting, None))

    def run(self, main) -> None:
        """Step every process until `main` has ended (the others are daemons: a drift or
        an outage still to come, a burst still flowing; their messages are cancelled)."""
        sg = self.sg
        wait_any_for, wait_any = sg.Comm.wait_any_for, sg.Comm.wait_any
        ready, timers, later, comms, owners = self.ready, self.timers, self.later, self.comms, self.owners
        step, ended, pop = self._step, self.ended, heapq.heappop
        self.spawn(main)
        self.now = sg.Engine.clock
        while True:
            while ready:
                step(*ready.popleft())
            if main in ended:
                break
            now = self.now
            if timers and timers[0][0] <= now:
                self._wake_timers()
                continue
            until = timers[0][0] if timers and not self.watch_all else math.inf
            while later and later[0][0] <= until:   # watch the messages that can end by then
                _, _, comm, process, group, fastest = pop(later)
                comms.append(comm)
                owners.append((process, group, fastest))
            if not comms and later:
                # a timer is waited for as a wait's timeout, not as a sleep, as long as any
                # message is in flight: SimGrid ends a sleep to within its timing precision
                # (1 ns), a timeout exactly, and the samples should not depend on which
                # messages are watched
                self._watch(later[0][0])
            if comms:
                try:
                    index = wait_any_for(comms, timers[0][0] - now) if timers else wait_any(comms)
                    self.now = sg.Engine.clock
                except sg.NetworkFailureException:
                    self.now = sg.Engine.clock
                    failed = [i for i, c in enumerate(comms) if c.state_str == "FAILED"]
                    if not failed:
                        raise
                    for i in reversed(failed):
                        self._finished(i, False)
                    continue
                if index < 0:
                    self._wake_timers()
                    if len(comms) > 2 * self.pruned_at + 8 and not self.watch_all:
                        self._prune()
                    continue
                if comms[index].finish_time < self.now - self.TIMING_PRECISION_S:
                    raise RuntimeError("a message ended before it was watched: its shortest "
                                       "time was not a lower bound")
                # swap-remove (the list's order is only the order wait_any looks at)
                process, group, _ = owners[index]
                comms[index], owners[index] = comms[-1], owners[-1]
                comms.pop()
                owners.pop()
                if len(comms) < self.pruned_at:   # doubling is counted from the fewest since
                    self.pruned_at = len(comms)
                if group is None:
                    ready.append((process, True))
                else:
                    group[0] -= 1
                    if group[0] == 0:
                        ready.append((process, None))
            elif timers:
                sg.this_actor.sleep_until(timers[0][0])
                self.now = sg.Engine.clock
                self._wake_timers()
            else:
                raise RuntimeError("every process waits and nothing can wake one")
        self._watch(math.inf)
        for comm in comms:
            comm.cancel()
        comms.clear()

