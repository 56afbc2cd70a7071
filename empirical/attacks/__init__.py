"""Attacks that choose their own requests (adaptive deletion), with their exact success laws."""
