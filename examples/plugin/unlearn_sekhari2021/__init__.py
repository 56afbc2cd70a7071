"""Sekhari, Acharya, Kamath, Suresh 2021 as an unlearn-verify plug-in (see README.md)."""
