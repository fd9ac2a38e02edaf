"""`h2dlint.codemod.FixHostToDeviceCopies`, the name libcst's tool knows the codemod by (see
`h2dlint.faces.codemod`)."""

from h2dlint.faces.codemod import FixHostToDeviceCopies

__all__ = ["FixHostToDeviceCopies"]
