"""Hypothesis profiles: quick for development, thorough for CI (HYPOTHESIS_PROFILE=ci)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
collect_ignore = ["fixtures/my_derivations.py"]  # a user module for --extra, not a test
