"""A planted SecureBoost leak shared by the privacy tests."""

from skfed.ensemble import _protocol


def plant_in_row_ids_slot(monkeypatch, leak):
    """Make the active party send ``leak(state)`` beside the row ids of its
    gradient message (a slot where integers are allowed), and the passive
    parties read the row ids back, so the fit runs as before.

    Only the semantic check can tell what the planted integers are.
    """
    original_active = _protocol.active_gradients
    original_passive = _protocol.passive_receive_gradients

    def leaky_active(state, *args):
        message = original_active(state, *args)
        if message is None:
            return None
        layout, rows, encrypted = message
        return layout, [rows, leak(state)], encrypted

    def passive(state, layout, rows, encrypted):
        return original_passive(state, layout, rows[0], encrypted)

    monkeypatch.setattr(_protocol, "active_gradients", leaky_active)
    monkeypatch.setattr(_protocol, "passive_receive_gradients", passive)
