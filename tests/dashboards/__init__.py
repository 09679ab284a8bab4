"""Tests of the dashboard: its pages' content and figures, and in headless Chromium."""
