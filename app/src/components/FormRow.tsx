import { Input, type InputProps } from 'antd-mobile';
import type { ReactNode } from 'react';

type FormRowProps = Omit<InputProps, 'className'> & {
  /** What the row asks for, at its left. */
  label: ReactNode;
  /** The unit typed in, at its right (元, 个), when there is one. */
  unit?: ReactNode;
};

/** One line of a form card: its label, an input (the rest of the props are the input's), its unit. */
export function FormRow({ label, unit, ...input }: FormRowProps) {
  return (
    <label className="form-row">
      <span className="form-row-label">{label}</span>
      <Input {...input} className="form-row-input" />
      {unit !== undefined && <span className="form-row-unit">{unit}</span>}
    </label>
  );
}
