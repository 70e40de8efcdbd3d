#pragma once
struct Error {};
