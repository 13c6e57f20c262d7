"""The fix engine: plans, the rewrites of tensor branches and their hazards, guards, rendering to edits
and applying them (the fix-point loop, which re-lints, is the engine's: engine/fixing.py)."""
