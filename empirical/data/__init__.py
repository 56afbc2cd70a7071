"""Data and requests: datasets (embedded, or read from a user's path), unlearning requests and the
checked reading of untrusted ``.npz`` files."""
