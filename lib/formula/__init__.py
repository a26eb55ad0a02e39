"""Attention itself: the formula, its fast, blockwise and modern forms, saturation, metrics, simulations, multi-head."""
