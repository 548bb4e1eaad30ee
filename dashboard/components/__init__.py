"""Pure layout factories: plain data in, Dash components out, no I/O."""
