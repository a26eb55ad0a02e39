"""What the rest of lib stands on: argument checks, the pages' claims, translation, figure style, timing, the device."""
