"""Test doubles that behave like the real systems (a real HTTP server, real git), not mocks."""
