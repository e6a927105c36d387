// oob drtcp: the component (OOB framework 2.0.0 of Open MPI 4.1), its
// parameters and the entry points the OOB base calls, all on the ORTE event
// base: available, startup, shutdown, send_nb, get_addr, set_addr,
// is_reachable.
#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "mca_params.hpp"
#include "oob.hpp"
#include "route.hpp"
#include "sockets.hpp"
#include "text.hpp"

namespace oob::drtcp::mca {

using plugin::common::logf;
using plugin::common::LogLevel;

State& state() noexcept {
    static State s;
    return s;
}

namespace {

constexpr std::string_view kPrefix = "drtcp://";

int drtcp_register() noexcept {
    return register_params();
}

int drtcp_open() noexcept {
    State& s = state();
    s.log.open("oob:drtcp", s.raw.verbose);
    return ORTE_SUCCESS;
}

int drtcp_close() noexcept {
    state().log.close();
    return ORTE_SUCCESS;
}

// Whether the user named this component in the oob selection (`--mca oob
// drtcp`): installed but not named, it stays out of the way (no listener,
// nothing in the URI), so a stock run does not change.
bool selected_by_name() noexcept {
    const int idx = mca_base_var_find("orte", "oob", nullptr, nullptr);
    const char** value = nullptr;
    if (idx < 0 || mca_base_var_get_value(idx, &value, nullptr, nullptr) != OPAL_SUCCESS ||
        value == nullptr)
        return false;
    return plugin::common::selection_names(*value, "drtcp");
}

// The addresses to publish: the filter, then (unless the user chose) no
// loopback when the host has anything else, like the stock component.
int drtcp_available() noexcept {
    State& s = state();
    if (!selected_by_name()) {
        logf(s.log, LogLevel::Debug, "not named in --mca oob: staying out of the way");
        return ORTE_ERR_NOT_AVAILABLE;
    }
    // Named in --mca oob and set wrong: say so once and end (mca_params.hpp).
    plugin::common::exit_on_bad_params(&mca_oob_drtcp_component.oob_base,
                                       core::validate(s.raw, s.config));
    auto ifs = plugin::common::select_interfaces(
        plugin::common::net::list_interfaces(), s.config.include, s.config.exclude,
        plugin::common::kFamilyV4 | plugin::common::kFamilyV6);
    if (!ifs || ifs->empty()) {
        logf(s.log, LogLevel::Info, "no usable interface");
        return ORTE_ERR_NOT_AVAILABLE;
    }
    s.ifs = std::move(*ifs);
    const bool others =
        std::any_of(s.ifs.begin(), s.ifs.end(), [](const auto& i) { return !i.addr.loopback(); });
    if (!s.config.include_set && others)
        std::erase_if(s.ifs, [](const auto& i) { return i.addr.loopback(); });
    return ORTE_SUCCESS;
}

int drtcp_startup() noexcept {
    State& s = state();
    // Only the launcher's processes listen; application processes never
    // use the OOB in 4.1 (they talk PMIx to their daemon).
    if (!ORTE_PROC_IS_HNP && !ORTE_PROC_IS_DAEMON)
        return ORTE_ERR_NOT_AVAILABLE;
    const int rc = open_listeners();
    s.started = rc == ORTE_SUCCESS;
    return rc;
}

void drtcp_shutdown() noexcept {
    State& s = state();
    if (!s.started)
        return;
    const Counters& c = s.counters;
    logf(s.log, LogLevel::Info,
         "sent %llu, received %llu, relayed %llu messages; refused %llu connections, "
         "%llu protocol errors",
         static_cast<unsigned long long>(c.sent), static_cast<unsigned long long>(c.received),
         static_cast<unsigned long long>(c.relayed), static_cast<unsigned long long>(c.refused),
         static_cast<unsigned long long>(c.decode_errors));
    close_all();
    s.started = false;
}

// The hop towards `dst` and whether we can reach it.
Peer* reachable_hop(char* routed, const orte_process_name_t* dst, core::Route& r) {
    orte_process_name_t target = *dst;
    const orte_process_name_t hop = orte_routed.get_route(routed, &target);
    r = core::route(name_of(*ORTE_PROC_MY_NAME), name_of(*dst), name_of(hop));
    if (r.kind != core::RouteKind::Forward)
        return nullptr;
    auto it = state().peers.find(key_of(r.hop));
    if (it == state().peers.end())
        return nullptr;
    Peer* p = it->second.get();
    return p->addrs.empty() && !p->fsm.connected() ? nullptr : p;
}

int drtcp_send_nb(orte_rml_send_t* msg) noexcept {
    State& s = state();
    if (!s.started)
        return ORTE_ERR_TAKE_NEXT_OPTION;
    core::Route r;
    Peer* p = reachable_hop(msg->routed, &msg->dst, r);
    if (p == nullptr)
        return ORTE_ERR_TAKE_NEXT_OPTION;  // untouched: the base tries elsewhere
    enqueue(*p, make_out(msg));
    return ORTE_SUCCESS;
}

char* drtcp_get_addr() noexcept {
    State& s = state();
    std::string uri(kPrefix);
    bool first = true;
    for (const plugin::common::LocalIf& i : s.ifs) {
        const auto l = std::find_if(s.listeners.begin(), s.listeners.end(),
                                    [&](const Listener& x) { return x.family == i.addr.family; });
        if (l == s.listeners.end())
            continue;
        if (!first)
            uri += ',';
        first = false;
        uri += i.addr.family == 6 ? "[" + i.addr.str() + "]" : i.addr.str();
        uri += ':' + std::to_string(l->port);
    }
    return first ? nullptr : strdup(uri.c_str());  // the base frees it
}

// "drtcp://a.b.c.d:port,[v6]:port,..." -> addresses and ports.
bool parse_uri(std::string_view uri, std::vector<plugin::common::IpAddr>& addrs,
               std::vector<std::uint16_t>& ports) {
    if (uri.substr(0, kPrefix.size()) != kPrefix)
        return false;
    for (std::string_view item : plugin::common::split_list(uri.substr(kPrefix.size()))) {
        std::string_view host;
        std::string_view port;
        if (!item.empty() && item.front() == '[') {
            const auto close = item.find("]:");
            if (close == std::string_view::npos)
                return false;
            host = item.substr(1, close - 1);
            port = item.substr(close + 2);
        } else {
            const auto colon = item.rfind(':');
            if (colon == std::string_view::npos)
                return false;
            host = item.substr(0, colon);
            port = item.substr(colon + 1);
        }
        auto ip = plugin::common::parse_ip(host);
        unsigned p = 0;
        const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
        if (!ip || ec != std::errc() || end != port.data() + port.size() || p == 0 || p > 65535)
            return false;
        addrs.push_back(*ip);
        ports.push_back(static_cast<std::uint16_t>(p));
    }
    return !addrs.empty();
}

int drtcp_set_addr(orte_process_name_t* peer, char** uris) noexcept {
    State& s = state();
    bool mine = false;
    for (char** u = uris; u != nullptr && *u != nullptr; ++u) {
        std::vector<plugin::common::IpAddr> addrs;
        std::vector<std::uint16_t> ports;
        if (!parse_uri(*u, addrs, ports)) {
            if (std::string_view(*u).substr(0, kPrefix.size()) == kPrefix)
                logf(s.log, LogLevel::Warn, "unusable address for %s: %s", ORTE_NAME_PRINT(peer),
                     *u);
            continue;
        }
        Peer& p = peer_for(name_of(*peer));
        p.addrs = std::move(addrs);
        p.ports = std::move(ports);
        mine = true;
    }
    return mine ? ORTE_SUCCESS : ORTE_ERR_TAKE_NEXT_OPTION;
}

bool drtcp_is_reachable(char* routed, orte_process_name_t* peer) noexcept {
    core::Route r;
    return state().started && reachable_hop(routed, peer, r) != nullptr;
}

}  // namespace

}  // namespace oob::drtcp::mca

extern "C" {
__attribute__((visibility("default"))) mca_oob_base_component_t mca_oob_drtcp_component = {
    .oob_base =
        {
            MCA_OOB_BASE_VERSION_2_0_0,
            .mca_component_name = "drtcp",
            MCA_BASE_MAKE_VERSION(component, 1, 0, 0),
            .mca_open_component = oob::drtcp::mca::drtcp_open,
            .mca_close_component = oob::drtcp::mca::drtcp_close,
            .mca_query_component = nullptr,
            .mca_register_component_params = oob::drtcp::mca::drtcp_register,
        },
    .oob_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
    .idx = 0,
    .priority = 30,
    .available = oob::drtcp::mca::drtcp_available,
    .startup = oob::drtcp::mca::drtcp_startup,
    .shutdown = oob::drtcp::mca::drtcp_shutdown,
    .send_nb = oob::drtcp::mca::drtcp_send_nb,
    .get_addr = oob::drtcp::mca::drtcp_get_addr,
    .set_addr = oob::drtcp::mca::drtcp_set_addr,
    .is_reachable = oob::drtcp::mca::drtcp_is_reachable,
    .query_transports = nullptr,
};
}
