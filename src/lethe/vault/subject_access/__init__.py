"""The right of access and to portability (GDPR Art. 15 / 20): a signed export of everything
held about one subject (``service``), gathered by ``collect``."""
