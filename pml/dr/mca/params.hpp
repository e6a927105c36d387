// pml dr MCA parameters: one table, registered at component register time.
#pragma once
#include "config.hpp"

// Open MPI's mca_base_component_t is a typedef of this struct.
struct mca_base_component_2_1_0_t;

namespace pml::dr::mca {

// Storage the MCA base writes into; read once at init and validated.
core::RawParams& raw_params() noexcept;
int register_params(const mca_base_component_2_1_0_t* component) noexcept;

}  // namespace pml::dr::mca
