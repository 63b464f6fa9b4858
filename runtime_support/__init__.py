"""pyree runtime support: the library that translated modules call.

Generated packages need only this package (plus numpy, llvmlite and pyelftools): never
the IREE runtime, never the translator.
"""
