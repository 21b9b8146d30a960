"""The pure core: value types, errors, the confirmation policy, argument validation, result text,
untrusted fencing, instructions and the wire formats. No I/O, no ``js``, no DOM."""
