"""The fix engine: plans, the rewrites of tensor branches and their hazards, guards, rendering to edits, and the fix-point loop."""
