"""PhysicsControl packets in `show_recorder_file_info(show_all=True)`: their records (UE4
wheels of 48 or 36 bytes, UE5 wheels as raw memory) and their text, apart from the printer
because they are the longest records CARLA prints, one engine form each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nanorec.errors import NanorecError

from ..ids import Engine
from ..records import (
    CURVE_DTYPE,
    GEAR_DTYPE,
    PHYSICS_UE4_DTYPE,
    PHYSICS_UE5_DTYPE,
    PHYSICS_WHEEL_DTYPES,
    Cursor,
)
from .base import (
    GEAR_SWITCH_TIME_DEFAULT,
    Packet,
    Row,
    byte_char,
    flat_dtype_of,
    rich_curve,
    var_records,
)


def physics_blocks(packet: Packet, engine: Engine, g: Callable[[float], str]) -> list[str]:
    """The text of each PhysicsControl record in `packet`, as `engine`'s CARLA prints it."""
    if engine is Engine.UE4:
        records = var_records(packet, _physics_ue4_parser(packet))[1]
        block = _physics_ue4
    else:
        records = var_records(packet, _physics_ue5_parser(packet))[1]
        block = _physics_ue5
    return [block(rec, g) for rec in records]


def _curve_line(name: str, arrays: dict[str, list[Row]], g: Callable[[float], str]) -> str:
    """`   <name> = (x, y) ...` with the points as the engine's curve holds them."""
    points = "".join(f" ({g(x)}, {g(y)})" for x, y in rich_curve(_pairs(arrays[name])))
    return f"   {name} ={points}\n"


def _physics_ue4(rec: tuple[Row, dict[str, list[Row]]], g: Callable[[float], str]) -> str:
    head, arrays = rec
    (pid, max_rpm, moi, dfull, dengaged, ddisengaged, autobox, clutch, final, mass, drag,
     cx, cy, cz) = head  # fmt: skip
    lines = [
        f"  Id: {pid}\n",
        f"   max_rpm = {g(max_rpm)}\n",
        f"   MOI = {g(moi)}\n",
        f"   damping_rate_full_throttle = {g(dfull)}\n",
        f"   damping_rate_zero_throttle_clutch_engaged = {g(dengaged)}\n",
        f"   damping_rate_zero_throttle_clutch_disengaged = {g(ddisengaged)}\n",
        f"   use_gear_auto_box = {'true' if autobox else 'false'}\n",
        f"   gear_switch_time = {g(GEAR_SWITCH_TIME_DEFAULT)}\n",
        f"   clutch_strength = {g(clutch)}\n",
        f"   final_ratio = {g(final)}\n",
        f"   mass = {g(mass)}\n",
        f"   drag_coefficient = {g(drag)}\n",
        f"   center_of_mass = ({g(cx)}, {g(cy)}, {g(cz)})\n",
        _curve_line("torque_curve", arrays, g),
        _curve_line("steering_curve", arrays, g),
        "   forward_gears:\n",
    ]
    lines += [
        f"    gear {i}: ratio {g(r[0])} down_ratio {g(r[1])} up_ratio {g(r[2])}\n"
        for i, r in enumerate(arrays["forward_gears"])
    ]
    lines.append("   wheels:\n")
    for i, w in enumerate(arrays["wheels"]):
        px, py, pz = w[-3:]
        lines.append(
            f"    wheel {i}: tire_friction {g(w[0])} damping_rate {g(w[1])}"
            f" max_steer_angle {g(w[2])} radius {g(w[3])} max_brake_torque {g(w[4])}"
            f" max_handbrake_torque {g(w[5])} position ({g(px)}, {g(py)}, {g(pz)})\n"
        )
    return "".join(lines)


def _physics_ue5(rec: tuple[Row, dict[str, list[Row]]], g: Callable[[float], str]) -> str:
    # UE5 (spec §5.15): the wheel elements are raw memory with heap pointers, so only
    # their headings are printed; every other field is as CARLA 0.10 prints it.
    head, arrays = rec
    names = flat_dtype_of(PHYSICS_UE5_DTYPE).names or ()
    h = dict(zip(names, head, strict=True))
    lines = [
        f"  Id: {h['id']}\n",
        f"   max_torque = {g(h['max_torque'])}\n",
        f"   max_rpm = {g(h['max_rpm'])}\n",
        f"   MOI = {g(h['rev_up_moi'])}\n",
        f"   rev_down_rate = {g(h['rev_down_rate'])}\n",
        f"   differential_type = {byte_char(h['differential_type'])}\n",
        f"   front_rear_split = {g(h['front_rear_split'])}\n",
        f"   use_gear_auto_box = {'true' if h['use_automatic_gears'] else 'false'}\n",
        f"   gear_change_time = {g(h['gear_change_time'])}\n",
        f"   final_ratio = {g(h['final_ratio'])}\n",
        f"   change_up_rpm = {g(h['change_up_rpm'])}\n",
        f"   change_down_rpm = {g(h['change_down_rpm'])}\n",
        f"   transmission_efficiency = {g(h['transmission_efficiency'])}\n",
        f"   mass = {g(h['mass'])}\n",
        f"   drag_coefficient = {g(h['drag_coefficient'])}\n",
        f"   center_of_mass = ({g(h['center_of_mass_0'])}, {g(h['center_of_mass_1'])},"
        f" {g(h['center_of_mass_2'])})\n",
        _curve_line("torque_curve", arrays, g),
        _curve_line("steering_curve", arrays, g),
        "   forward_gear_ratios:\n",
    ]
    lines += [
        f"    gear {i}: ratio {g(r[0])}\n" for i, r in enumerate(arrays["forward_gear_ratios"])
    ]
    lines.append("   reverse_gear_ratios:\n")
    lines += [
        f"    gear {i}: ratio {g(r[0])}\n" for i, r in enumerate(arrays["reverse_gear_ratios"])
    ]
    lines.append("   wheels:")
    lines += [f"\nwheel #{i}:\n" for i in range(len(arrays["wheels"]))]
    lines.append("\n")
    return "".join(lines)


def _pairs(rows: list[Row]) -> list[tuple[float, float]]:
    return [(float(r[0]), float(r[1])) for r in rows]


def _array_rows(cur: Cursor, dtype: np.dtype[Any], what: str) -> list[Row]:
    count = cur.u32(f"PhysicsControl {what} count")
    flat = flat_dtype_of(dtype) if dtype.fields else np.dtype([("v", dtype)])
    rows: list[Row] = cur.array(flat, count, f"PhysicsControl {what}").tolist()
    return rows


def _physics_ue4_parser(packet: Packet) -> Callable[[Cursor], tuple[Row, dict[str, list[Row]]]]:
    # Try 48-byte wheels, then 36 (spec §10.5), on the whole packet once.
    wheel = _physics_wheel_size(packet)

    def parse(cur: Cursor) -> tuple[Row, dict[str, list[Row]]]:
        head = cur.array(flat_dtype_of(PHYSICS_UE4_DTYPE), 1, "PhysicsControl").tolist()[0]
        arrays = {
            "torque_curve": _array_rows(cur, CURVE_DTYPE, "torque_curve"),
            "forward_gears": _array_rows(cur, GEAR_DTYPE, "forward_gears"),
            "steering_curve": _array_rows(cur, CURVE_DTYPE, "steering_curve"),
            "wheels": _array_rows(cur, PHYSICS_WHEEL_DTYPES[wheel], "wheels"),
        }
        return head, arrays

    return parse


def _physics_wheel_size(packet: Packet) -> int:
    for size in (48, 36):
        cur = Cursor(packet.body, packet.offset, 0)
        try:
            count = cur.u16("count")
            for _ in range(count):
                cur.take(PHYSICS_UE4_DTYPE.itemsize, "head")
                for element in (8, 12, 8, size):
                    cur.take(cur.u32("n") * element, "array")
        except NanorecError:
            continue
        if cur.remaining == 0:
            return size
    return 48


def _physics_ue5_parser(packet: Packet) -> Callable[[Cursor], tuple[Row, dict[str, list[Row]]]]:
    def parse(cur: Cursor) -> tuple[Row, dict[str, list[Row]]]:
        head = cur.array(flat_dtype_of(PHYSICS_UE5_DTYPE), 1, "PhysicsControl").tolist()[0]
        arrays = {
            "torque_curve": _array_rows(cur, CURVE_DTYPE, "torque_curve"),
            "forward_gear_ratios": _array_rows(cur, np.dtype("<f4"), "forward_gear_ratios"),
            "reverse_gear_ratios": _array_rows(cur, np.dtype("<f4"), "reverse_gear_ratios"),
            "steering_curve": _array_rows(cur, CURVE_DTYPE, "steering_curve"),
        }
        wheels = cur.u32("PhysicsControl wheels count")
        # The element size is not portable (raw memory); derive it from what is left when
        # this is the packet's last record, else use the computed 208 bytes.
        size = 208
        if wheels and cur.remaining % wheels == 0 and cur.remaining // wheels < 4096:
            size = cur.remaining // wheels
        cur.take(wheels * size, "PhysicsControl wheels")
        arrays["wheels"] = [()] * wheels
        return head, arrays

    return parse


__all__ = ["physics_blocks"]
