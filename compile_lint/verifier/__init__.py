"""Runtime proof on the real compiler. torch is imported lazily, only in here."""
