"""``ppaux inspect PATH...``: describe and check captured PP tensor dicts (torch-free)."""
