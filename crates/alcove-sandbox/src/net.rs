//! Network confinement: a fresh user and network namespace.
//!
//! A new network namespace has no interfaces but a loopback that is down,
//! so nothing — TCP or UDP, IPv4 or IPv6, the host's loopback services
//! included — can be reached. With `allow_loopback` the namespace's own
//! loopback is brought up, so a command can talk to servers it starts
//! itself (test suites do), still without reaching the host's. Unprivileged
//! processes may create a network namespace inside a user namespace of their
//! own; the user namespace maps the caller's ids to themselves, so files and
//! `id` look the same inside.

use std::os::fd::AsRawFd;

use nix::sched::{CloneFlags, unshare};
use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto, socket,
};
use nix::unistd::{Gid, Uid, getgid, getuid};

/// Moves the calling (single-threaded) process into a new user and network
/// namespace.
pub(crate) fn isolate(allow_loopback: bool) -> Result<(), String> {
    let (uid, gid) = (getuid(), getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)
        .map_err(|err| format!("cannot create a network namespace (unshare: {err})"))?;
    map_ids(uid, gid)?;
    if allow_loopback {
        loopback_up().map_err(|err| format!("cannot bring up the loopback: {err}"))?;
    }
    Ok(())
}

/// Maps `uid` and `gid` to themselves in the user namespace the calling
/// process has just created, so files and `id` look the same inside.
pub(crate) fn map_ids(uid: Uid, gid: Gid) -> Result<(), String> {
    crate::spawn::write_id_maps(
        &crate::spawn::id_map(uid.as_raw())?,
        &crate::spawn::id_map(gid.as_raw())?,
    )
}

/// Sets the flag IFF_UP on `lo` with one RTM_NEWLINK netlink request.
fn loopback_up() -> Result<(), String> {
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST_ACK: u16 = 1 | 4;
    const NLMSG_ERROR: u16 = 2;
    const IFF_UP: u32 = 1;
    let index = nix::net::if_::if_nametoindex("lo").map_err(|err| err.to_string())?;
    let mut message = Vec::with_capacity(32);
    message.extend_from_slice(&32u32.to_ne_bytes()); // nlmsg_len
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST_ACK.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes()); // seq
    message.extend_from_slice(&0u32.to_ne_bytes()); // pid
    message.extend_from_slice(&[0, 0]); // ifi_family, pad
    message.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
    message.extend_from_slice(&index.to_ne_bytes()); // ifi_index
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_flags
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_change
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )
    .map_err(|err| err.to_string())?;
    sendto(
        fd.as_raw_fd(),
        &message,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )
    .map_err(|err| err.to_string())?;
    let mut reply = [0u8; 256];
    let read =
        recv(fd.as_raw_fd(), &mut reply, MsgFlags::empty()).map_err(|err| err.to_string())?;
    if read < 20 || u16::from_ne_bytes([reply[4], reply[5]]) != NLMSG_ERROR {
        return Err("unexpected netlink reply".to_owned());
    }
    let code = i32::from_ne_bytes([reply[16], reply[17], reply[18], reply[19]]);
    if code != 0 {
        return Err(nix::errno::Errno::from_raw(-code).to_string());
    }
    Ok(())
}
