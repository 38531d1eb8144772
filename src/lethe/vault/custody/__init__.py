"""Custody of subjects' keys: the keyring and DEK cache, sealing, pseudonyms. Never hvac."""
