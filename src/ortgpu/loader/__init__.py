"""The loader room: how ld.so and the Windows loader would resolve a library's needs, without loading anything."""
