"""Tools the model can call: specs, argument checking, and handlers."""
