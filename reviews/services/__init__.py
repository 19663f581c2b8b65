"""The only code that changes review state: one function per transition."""
