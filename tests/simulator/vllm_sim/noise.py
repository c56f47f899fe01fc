"""Measurement noise of a real board, so the verdict's statistics meet what a fleet shows.

Settings (profile key ``noise``, all optional, all off by default):

* ``step_jitter_cv``: each engine step takes ``duration x LogNormal(cv)``
  (kernel launch, memory-controller and scheduler jitter);
* ``acceptance_spread``: each request scales its acceptance probabilities by
  ``LogNormal(spread)`` (prompts differ in how predictable they are);
* ``drift_cv`` / ``drift_period_s``: a speed factor ``LogNormal(drift_cv)``
  redrawn every ``drift_period_s`` model seconds and at every start (clocks,
  temperature and background load move between benchmark rounds);
* ``thermal``: ``{"after_s", "duration_s", "slowdown"}``: a throttling episode,
  steps ``slowdown`` times slower from ``after_s`` for ``duration_s`` model
  seconds after the start (also accepted as the fault ``thermal_throttle``);
  with ``"after_requests": N`` instead of ``after_s`` the episode begins when
  the (N+1)th request since the start is admitted.  Model time depends on how
  well requests batch, which depends on the host's CPU contention; a request
  count does not, so tests that must throttle one benchmark round and not the
  one before it count requests; ``"duration_requests": M`` instead of
  ``duration_s`` ends it when the (N+M+1)th request is admitted.  The noise
  episode is unseen by the board's sensors (a slowdown nobody explains); the
  fault ``thermal_throttle`` also shows in the simulated GPU clock and
  temperature (board_sysfs.py), as a real throttle does;
* ``seed``: fixed seed (tests); without it every start draws anew, which is
  what makes two runs of one server differ.
"""
import math
import random


class Noise(object):
    def __init__(self, settings=None):
        s = dict(settings or {})
        self.step_sigma = _sigma(s.get("step_jitter_cv", 0.0))
        self.accept_sigma = float(s.get("acceptance_spread", 0.0))
        self.drift_sigma = _sigma(s.get("drift_cv", 0.0))
        self.drift_period = float(s.get("drift_period_s", 60.0))
        thermal = s.get("thermal") or {}
        self.thermal = (float(thermal.get("after_s", 0.0)), float(thermal.get("duration_s", 0.0)),
                        float(thermal.get("slowdown", 1.0))) if thermal else None
        # after_requests: the episode's start is unknown until that many requests were admitted.
        self.thermal_after_requests = (int(thermal["after_requests"])
                                       if thermal and thermal.get("after_requests") is not None else None)
        self.thermal_duration_requests = (int(thermal["duration_requests"])
                                          if thermal and thermal.get("duration_requests") is not None else None)
        if self.thermal_duration_requests is not None and self.thermal_after_requests is None:
            raise ValueError("thermal: duration_requests needs after_requests")
        self.admitted = 0
        # Called with True when the episode begins and False when it ends (the board's sensors).
        self.on_throttle = None
        self._throttled = False
        seed = s.get("seed")
        self.rng = random.Random(seed) if seed is not None else random.Random(random.SystemRandom().getrandbits(64))
        self.model_t = 0.0
        self.next_drift_at = self.drift_period
        self.drift = self._draw(self.drift_sigma)
        self.enabled = bool(self.step_sigma or self.accept_sigma or self.drift_sigma or self.thermal)

    def _draw(self, sigma):
        return math.exp(self.rng.gauss(0.0, sigma)) if sigma else 1.0

    def step(self, duration):
        """The noisy duration of a step of ``duration`` model seconds; advances model time."""
        if not self.enabled:
            return duration
        if self.drift_sigma and self.drift_period > 0:
            while self.model_t >= self.next_drift_at:
                self.drift = self._draw(self.drift_sigma)
                self.next_drift_at += self.drift_period
        factor = self.drift * self._draw(self.step_sigma)
        if self.throttled():
            factor *= self.thermal[2]
        out = duration * factor
        self.model_t += out
        self._notify()
        return out

    def throttled(self):
        """Whether the thermal episode slows the step about to run."""
        if not self.thermal:
            return False
        after, length, dummy = self.thermal
        if self.thermal_after_requests is not None:
            if self.admitted <= self.thermal_after_requests:
                return False
            if self.thermal_duration_requests is not None:
                return self.admitted <= self.thermal_after_requests + self.thermal_duration_requests
        return after <= self.model_t < after + length

    def admit(self):
        """Count an admitted request; starts a request-counted thermal episode at its threshold."""
        self.admitted += 1
        if self.thermal_after_requests is not None and self.admitted == self.thermal_after_requests + 1:
            dummy, length, slowdown = self.thermal
            self.thermal = (self.model_t, length, slowdown)
        self._notify()

    def _notify(self):
        now = self.throttled()
        if now != self._throttled:
            self._throttled = now
            if self.on_throttle is not None:
                self.on_throttle(now)

    def acceptance_scale(self):
        """Per-request multiplier of the acceptance probabilities."""
        return math.exp(self.rng.gauss(0.0, self.accept_sigma)) if self.accept_sigma else 1.0


def _sigma(cv):
    cv = float(cv or 0.0)
    if cv < 0:
        raise ValueError("noise CVs must be >= 0, got %r" % cv)
    return math.sqrt(math.log(1.0 + cv * cv)) if cv else 0.0
