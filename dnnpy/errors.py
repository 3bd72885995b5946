"""dnnpy's exception types."""


class SerializationError(Exception):
    """A file or stream could not be read or written as the expected net/layer/tensor."""
