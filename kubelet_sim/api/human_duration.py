"""apimachinery's ``duration.HumanDuration``: how kubectl columns print an age."""

from __future__ import annotations


def human_duration(seconds: int) -> str:
    """apimachinery's HumanDuration of ``seconds`` (5s, 3m10s, 5h20m, 2d4h, 3y20d, ...)."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"
