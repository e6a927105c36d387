// pml dr MPI_T performance variables (pml_dr_<counter>), registered with the
// component's parameters; see pvars.cpp for the list.
#pragma once

// Open MPI's mca_base_component_t is a typedef of this struct.
struct mca_base_component_2_1_0_t;

namespace pml::dr::mca {

// Returns the number of variables that failed to register (0: all did).
int register_pvars(const mca_base_component_2_1_0_t* component) noexcept;

}  // namespace pml::dr::mca
