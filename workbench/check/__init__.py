"""Static checks on a TLX kernel's orchestration model, before anything runs (issue 19)."""
