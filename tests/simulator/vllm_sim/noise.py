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
        if self.thermal:
            after, length, slowdown = self.thermal
            if after <= self.model_t < after + length:
                factor *= slowdown
        out = duration * factor
        self.model_t += out
        return out

    def acceptance_scale(self):
        """Per-request multiplier of the acceptance probabilities."""
        return math.exp(self.rng.gauss(0.0, self.accept_sigma)) if self.accept_sigma else 1.0


def _sigma(cv):
    cv = float(cv or 0.0)
    if cv < 0:
        raise ValueError("noise CVs must be >= 0, got %r" % cv)
    return math.sqrt(math.log(1.0 + cv * cv)) if cv else 0.0
